import { describe, expect, it } from 'vitest';
import { controllerCommand } from '../../../agent/cli/controller.ts';
import { chooseLoops } from '../../../agent/controller/loops.ts';
import { UsageError } from '../../../agent/errors.ts';

describe('which loops the controller runs', () => {
  it('with a cloud: the resource loop runs beside Syncs and the cloud lifecycle', () => {
    expect(chooseLoops({ cloudName: 'kupenstack-local', syncs: true, cloudLifecycle: true })).toEqual({ resources: true, syncs: true, cloudLifecycle: true });
    expect(chooseLoops({ cloudName: 'kupenstack-local', syncs: false, cloudLifecycle: false })).toEqual({ resources: true, syncs: false, cloudLifecycle: false });
  });

  it('without a cloud it drives OpenStackCloud only (installing a cloud cannot need one to exist), Syncs as asked', () => {
    expect(chooseLoops({ syncs: true, cloudLifecycle: true })).toEqual({ resources: false, syncs: true, cloudLifecycle: true });
    expect(chooseLoops({ syncs: false, cloudLifecycle: true })).toEqual({ resources: false, syncs: false, cloudLifecycle: true });
    expect(chooseLoops({ cloudName: '', syncs: true, cloudLifecycle: true }).resources).toBe(false);
  });

  it('without a cloud and with --no-cloud-lifecycle it refuses, naming both ways out', () => {
    expect(() => chooseLoops({ syncs: true, cloudLifecycle: false })).toThrow(UsageError);
    expect(() => chooseLoops({ syncs: true, cloudLifecycle: false })).toThrow(/no cloud given: pass --cloud NAME.*which --no-cloud-lifecycle turns off/);
  });

  it('the command line refuses the same before it connects anywhere', async () => {
    const cmd = controllerCommand().exitOverride();
    await expect(cmd.parseAsync(['node', 'controller', '--no-cloud-lifecycle', '--kubeconfig', '/nonexistent/kubeconfig'])).rejects.toThrow(/no cloud given/);
  });
});
