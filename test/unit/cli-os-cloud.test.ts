import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cloudName, resolveCloud } from '../../agent/cli/cloud-options.ts';
import { controllerCommand } from '../../agent/cli/controller.ts';

/** OS_CLOUD is the default --cloud, as every OpenStack tool reads it (issue 31). */
describe('OS_CLOUD as the default --cloud', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('the flag wins, then OS_CLOUD, then the config file; an empty OS_CLOUD counts as unset', () => {
    expect(cloudName('flag', 'file', { OS_CLOUD: 'env' })).toBe('flag');
    expect(cloudName(undefined, 'file', { OS_CLOUD: 'env' })).toBe('env');
    expect(cloudName(undefined, 'file', {})).toBe('file');
    expect(cloudName(undefined, 'file', { OS_CLOUD: '' })).toBe('file');
    expect(cloudName(undefined, undefined, {})).toBeUndefined();
  });

  it('every command that takes --cloud (apply, plan, agent, export, image import|export) resolves it from OS_CLOUD', () => {
    const config = join(mkdtempSync(join(tmpdir(), 'ks-os-cloud-')), 'kupenstack.yaml');
    writeFileSync(config, 'cloud: from-file\n');
    vi.stubEnv('OS_CLOUD', 'from-env');
    expect(resolveCloud({ config }).cloud).toBe('from-env');
    expect(resolveCloud({ config, cloud: 'from-flag' }).cloud).toBe('from-flag');
    vi.stubEnv('OS_CLOUD', '');
    expect(resolveCloud({ config }).cloud).toBe('from-file');
    expect(() => resolveCloud({})).toThrow(/no cloud given: pass --cloud NAME \(an entry of clouds.yaml\), set OS_CLOUD, or set "cloud" in the config file/);
  });

  it('the controller takes its cloud from OS_CLOUD too: with it, --no-cloud-lifecycle is not refused for want of a cloud', async () => {
    vi.stubEnv('OS_CLOUD', '');
    await expect(controllerCommand().exitOverride().parseAsync(['node', 'controller', '--no-cloud-lifecycle', '--kubeconfig', '/nonexistent/kubeconfig'])).rejects.toThrow(/no cloud given/);
    vi.stubEnv('OS_CLOUD', 'from-env');
    await expect(controllerCommand().exitOverride().parseAsync(['node', 'controller', '--no-cloud-lifecycle', '--kubeconfig', '/nonexistent/kubeconfig'])).rejects.toThrow(/nonexistent\/kubeconfig/);
  });
});
