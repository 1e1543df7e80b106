import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { CloudApplyResult } from '../../agent/cloud/apply.ts';
import { describeStep, type Step } from '../../agent/cloud/phases.ts';
import type { RenderedChart } from '../../agent/cloud/render-cloud.ts';
import type { RenderedObject } from '../../agent/cloud/render.ts';
import { CloudUpgrade } from '../../agent/cloud/upgrade-run.ts';
import type { OpenStackCloudStatus } from '../../agent/model/kinds.generated.ts';

/**
 * The upgrade's order (audit M10): the backup Job runs to completion before any chart
 * is touched, a failed backup touches no chart, and a resumed upgrade whose status says
 * the backup is done does not take a second one. The steps are recorded where the real
 * run applies them to the API server (test/integration/cloud/upgrade.test.ts).
 */
const obj = (chart: string, kind: string, name: string, spec: Record<string, unknown> = {}): RenderedObject => ({ chart, apiVersion: kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1', kind, name, phase: { kind: 'main' }, object: { apiVersion: 'x', kind, metadata: { name }, spec } });
const chart = (name: string, objects: RenderedObject[]): RenderedChart => ({ chart: name, version: '0.1.0', source: 'test', values: {}, objects, millis: { fetch: 0, render: 0 } });
const rendered = [
  chart('mariadb', [obj('mariadb', 'CronJob', 'mariadb-backup', { jobTemplate: { spec: { backoffLimit: 0 } } }), obj('mariadb', 'StatefulSet', 'mariadb-server')]),
  chart('keystone', [obj('keystone', 'Deployment', 'keystone-api')]),
  chart('glance', [obj('glance', 'Deployment', 'glance-api')]),
];
const spec = { release: '2025.2' };
const opts = { cloud: 'c', namespace: 'openstack', steps: { kubeConfig: new KubeConfig(), cloud: 'c', namespace: 'openstack' } };

/** Records every step applied, failing the one whose description matches `failOn`. */
function recorder(failOn?: RegExp): { steps: string[]; saved: OpenStackCloudStatus[]; apply: (steps: readonly Step[]) => Promise<CloudApplyResult>; store: { save: (s: { status: OpenStackCloudStatus }) => Promise<void> } } {
  const steps: string[] = [];
  const saved: OpenStackCloudStatus[] = [];
  return {
    steps,
    saved,
    apply: (batch) => {
      for (const s of batch) {
        steps.push(describeStep(s));
        if (failOn?.test(describeStep(s))) return Promise.resolve({ done: [], failure: { step: describeStep(s), kind: 'Job', name: 'x', reason: 'failed' } });
      }
      return Promise.resolve({ done: batch.map(describeStep) });
    },
    store: { save: ({ status }) => Promise.resolve(void saved.push(structuredClone(status))) },
  };
}

describe('an upgrade (driveCloud\'s release change)', () => {
  it('runs the backup Job first, then one chart at a time; status records the backup before any chart starts', async () => {
    const r = recorder();
    const out = await new CloudUpgrade(spec, rendered, { release: '2025.1' }, r.store, opts, r.apply).run();
    expect(out).toBeUndefined();
    expect(r.steps[0]).toMatch(/Job\/mariadb-backup-before-2025-2$/);
    expect(r.steps.filter((s) => s.includes('mariadb-backup-before'))).toHaveLength(1);
    expect(r.steps.slice(1).join('\n')).toMatch(/mariadb-server[\s\S]*keystone-api[\s\S]*glance-api/);
    const firstChart = r.saved.findIndex((s) => s.upgrade?.phase === 'Upgrading');
    expect(firstChart).toBeGreaterThan(0);
    expect(r.saved[firstChart]?.upgrade?.backup).toBe('Job openstack/mariadb-backup-before-2025-2');
    expect(r.saved.at(-1)?.upgrade?.phase).toBe('Succeeded');
  });

  it('a failed backup touches no chart: the upgrade stops at the backup', async () => {
    const r = recorder(/mariadb-backup-before/);
    const out = await new CloudUpgrade(spec, rendered, { release: '2025.1' }, r.store, opts, r.apply).run();
    expect(r.steps).toEqual([expect.stringMatching(/Job\/mariadb-backup-before-2025-2$/)]);
    expect(out?.failure?.step).toBe('backup');
    expect(out?.status.lastBackup?.result).toBe('Failed');
  });

  it('a resumed upgrade whose backup is done takes no second one and resumes at its chart', async () => {
    const r = recorder();
    const status: OpenStackCloudStatus = { release: '2025.1', upgrade: { from: '2025.1', to: '2025.2', phase: 'Upgrading', service: 'glance', backup: 'Job openstack/mariadb-backup-before-2025-2' } };
    await new CloudUpgrade(spec, rendered, status, r.store, opts, r.apply).run();
    expect(r.steps.some((s) => s.includes('mariadb-backup-before'))).toBe(false);
    expect(r.steps.join('\n')).toContain('glance-api');
    expect(r.steps.join('\n')).not.toContain('keystone-api');
  });
});
