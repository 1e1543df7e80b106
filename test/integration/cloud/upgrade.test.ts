import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Watch, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driveCloud, type DriveOptions } from '../../../agent/cloud/drive.ts';
import { planCloud } from '../../../agent/cloud/plan.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import type { OpenStackCloudSpec } from '../../../agent/model/kinds.generated.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * A release change 2025.1 → 2025.2 of the test cloud on the test bed (kwok failure stages
 * from test/testbed/kubernetes/kwok-stages.yaml): a failing backup refuses the upgrade and
 * touches no chart; a failing db-sync stops the upgrade at that chart — the charts before it
 * run 2025.2, the ones after still 2025.1 — and status names the Job, reason and exit code;
 * the next run resumes at that chart without a second backup and finishes Ready on 2025.2.
 */
const ns = 'cloud-upgrade';
const work = mkdtempSync(join(tmpdir(), 'ks-cloud-upgrade-'));
const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const opts: DriveOptions = { kubeConfig: kc, cloud: 'cloud-upgrade', namespace: ns, baseDir: work, helm: charts.helm, pollMs: 300, stepDeadlineMs: 240_000 };
const v1: OpenStackCloudSpec = { release: '2025.1', chart: { repository: charts.repository } };
const v2: OpenStackCloudSpec = { ...v1, release: '2025.2' };

beforeAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
});

const stops: (() => void)[] = [];
afterAll(async () => {
  for (const stop of stops) stop();
  rmSync(work, { recursive: true, force: true });
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

const image = (kind: string, name: string): Promise<string> => kubectlOk(['-n', ns, 'get', `${kind}/${name}`, '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
const jobUid = (name: string): Promise<string> => kubectlOk(['-n', ns, 'get', `job/${name}`, '-o', 'jsonpath={.metadata.uid}']);

interface JobEvent { type: string; name: string; complete: boolean }
/** Watches the namespace's Jobs from now on (a list's resourceVersion: no synthetic ADDED for what exists); returns the stop. */
async function watchJobs(into: JobEvent[]): Promise<() => void> {
  // The API server's JobList (`kubectl get -o json` makes a List of its own, without a resourceVersion).
  let resourceVersion = (JSON.parse(await kubectlOk(['get', '--raw', `/apis/batch/v1/namespaces/${ns}/jobs`])) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  if (!resourceVersion) throw new Error(`the Job list of ${ns} has no resourceVersion to watch from`);
  const completed = new Set<string>();
  let stopped = false;
  let abort = (): void => undefined;
  // client-node ends a watch after a timeout: resume from the last resourceVersion seen, so no event is lost or repeated.
  const start = async (): Promise<void> => {
    const req = await new Watch(loadKubeConfig({ kubeconfig: kube.kubeconfig })).watch(`/apis/batch/v1/namespaces/${ns}/jobs`, { resourceVersion }, (type: string, obj: KubernetesObject & { status?: { conditions?: { type: string; status: string }[] } }) => {
      resourceVersion = obj.metadata!.resourceVersion!;
      const uid = obj.metadata!.uid!;
      const complete = !completed.has(uid) && (obj.status?.conditions ?? []).some((c) => c.type === 'Complete' && c.status === 'True');
      if (complete) completed.add(uid);
      into.push({ type, name: obj.metadata!.name!, complete });
    }, () => {
      if (!stopped) void start();
    });
    abort = () => req.abort();
  };
  await start();
  return () => {
    stopped = true;
    abort();
  };
}

describe('upgrading the test cloud 2025.1 → 2025.2', () => {
  it('refuses on a failed backup, stops at a failing db-sync, resumes there without a second backup', async () => {
    const log: string[] = [];
    const installed = await driveCloud(v1, { ...opts, log: (l) => log.push(l) });
    expect(installed.failure, log.join('\n')).toBeUndefined();
    expect(installed.status.release).toBe('2025.1');
    const keystone1 = await image('deployment', 'keystone-api');
    expect(keystone1).toMatch(/:2025\.1/);
    // Every Job change from here on, in the API server's order (one watch: its events come in resourceVersion order).
    const events: JobEvent[] = [];
    stops.push(await watchJobs(events));

    // The plan of the upgrade: per-object image changes, replaced Jobs, the backup, the charts in order.
    const plan = await planCloud(v2, opts);
    const keystoneApi = plan.changes.find((c) => c.kind === 'Deployment' && c.name === 'keystone-api');
    expect(keystoneApi?.action).toBe('update');
    expect(keystoneApi?.images?.[0]?.to).toMatch(/:2025\.2/);
    const jobs = (action: string): string[] => plan.changes.filter((c) => c.kind === 'Job' && c.action === action).map((c) => c.name);
    expect(jobs('replace')).toContain('placement-db-sync');
    // keystone and glance 2025.2 migrate in expand → migrate → contract Jobs instead of one db-sync.
    expect(jobs('create')).toEqual(expect.arrayContaining(['keystone-db-sync-expand', 'keystone-db-sync-migrate', 'keystone-db-sync-contract']));
    expect(jobs('delete')).toContain('keystone-db-sync');
    expect(plan.steps[0]).toBe('upgrade 2025.1 → 2025.2');
    expect(plan.steps[1]).toBe('no maintenance window: steps may start at any time');
    expect(plan.steps[2]).toMatch(/^backup: Job mariadb-backup-before-2025-2 runs to completion first/);
    expect(plan.steps.slice(3).map((s) => s.split(':')[0])).toEqual(['1. mariadb', '2. rabbitmq', '3. memcached', '4. keystone', '5. placement', '6. glance', '7. neutron', '8. nova', '9. cinder', '10. horizon']);

    // A failing backup refuses the upgrade: no chart is touched.
    const badBackup = await driveCloud({ ...v2, infrastructure: { mariadb: { values: { test: { fail: { backup: true } } } } } }, opts);
    expect(badBackup.ready).toBe(false);
    expect(badBackup.failure?.name).toBe('mariadb-backup-before-2025-2');
    expect(badBackup.status.lastBackup?.result).toBe('Failed');
    expect(badBackup.status.upgrade?.backup).toBeUndefined();
    expect(await image('deployment', 'keystone-api')).toBe(keystone1);

    // A failing glance db-sync (its expand step in 2025.2): keystone and placement (before it) upgraded, neutron, nova, cinder, horizon (after it) untouched.
    const failing: OpenStackCloudSpec = { ...v2, services: { glance: { values: { test: { fail: { 'db-sync-expand': true } } } } } };
    const stopped = await driveCloud(failing, opts);
    expect(stopped.ready).toBe(false);
    expect(stopped.failure).toMatchObject({ kind: 'Job', name: 'glance-db-sync-expand', exitCode: 1 });
    expect(stopped.failure?.reason).toMatch(/BackoffLimitExceeded|Failed/);
    expect(stopped.status.upgrade).toMatchObject({ from: '2025.1', to: '2025.2', phase: 'Failed', service: 'glance', backup: `Job ${ns}/mariadb-backup-before-2025-2` });
    expect(stopped.status.lastBackup?.result).toBe('Succeeded');
    expect(await image('deployment', 'keystone-api')).toMatch(/:2025\.2/);
    expect(await image('deployment', 'placement-api')).toMatch(/:2025\.2/);
    for (const [kind, name] of [['deployment', 'neutron-server'], ['deployment', 'nova-api'], ['deployment', 'cinder-api'], ['deployment', 'horizon-server']] as const) {
      expect(await image(kind, name), `${kind}/${name} untouched`).toMatch(/:2025\.1/);
    }
    expect(stopped.status.services?.glance?.message).toMatch(/glance-db-sync-expand.*exit code 1/);
    const backupUid = await jobUid('mariadb-backup-before-2025-2');

    // Fixed: the next run resumes at glance, takes no second backup, and finishes.
    const resumedLog: string[] = [];
    const resumed = await driveCloud(v2, { ...opts, log: (l) => resumedLog.push(l) });
    expect(resumed.failure, resumedLog.join('\n')).toBeUndefined();
    expect(resumed.ready).toBe(true);
    expect(resumed.status.release).toBe('2025.2');
    expect(resumed.status.upgrade?.phase).toBe('Succeeded');
    const charted = resumedLog.filter((l) => l.includes('upgrade 2025.1 → 2025.2:'));
    expect(charted.length).toBeGreaterThan(0);
    expect(charted[0]).toMatch(/: glance \(6 of 10\)/);
    expect(resumedLog.some((l) => l.includes('backup Job'))).toBe(false);
    expect(await jobUid('mariadb-backup-before-2025-2')).toBe(backupUid);
    for (const name of ['keystone-api', 'glance-api', 'neutron-server', 'nova-api', 'cinder-api', 'horizon-server']) expect(await image('deployment', name), name).toMatch(/:2025\.2/);
    expect((await planCloud(v2, opts)).changes).toEqual([]);

    // The order the API server recorded, by the sequence of the Job watch opened before the upgrade (audit W4; 1-second timestamps
    // cannot order events of one second): the backup completed before the first migration Job appeared, and each chart's first
    // migration Job appeared after the one of the chart before it in the upgrade order.
    const order = ['keystone', 'placement', 'glance', 'neutron', 'nova', 'cinder', 'horizon'];
    const backupDone = events.findIndex((e) => e.name === 'mariadb-backup-before-2025-2' && e.complete);
    expect(backupDone, events.map((e) => `${e.type} ${e.name}${e.complete ? ' complete' : ''}`).join('\n')).not.toBe(-1);
    const firstAdded = new Map<string, number>();
    events.forEach((e, seq) => {
      const m = /^(\w+)-db-sync(?:-expand)?$/.exec(e.name);
      if (e.type === 'ADDED' && m && order.includes(m[1]!) && !firstAdded.has(m[1]!)) firstAdded.set(m[1]!, seq);
    });
    const migrations = order.filter((c) => firstAdded.has(c));
    expect(migrations).toEqual(expect.arrayContaining(['keystone', 'placement', 'glance', 'neutron', 'nova', 'cinder']));
    const late: string[] = [];
    for (const c of migrations) if (firstAdded.get(c)! < backupDone) late.push(`${c}'s migration Job appeared (#${firstAdded.get(c)}) before the backup completed (#${backupDone})`);
    const seqs = migrations.map((c) => firstAdded.get(c)!);
    for (let i = 1; i < migrations.length; i++) if (seqs[i]! < seqs[i - 1]!) late.push(`${migrations[i]} (#${seqs[i]}) before ${migrations[i - 1]} (#${seqs[i - 1]})`);
    expect(late).toEqual([]);
  }, 1_200_000);
});
