import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driveCloud, type DriveOptions, type DriveResult } from '../../../agent/cloud/drive.ts';
import { planCloud } from '../../../agent/cloud/plan.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import type { OpenStackCloudSpec } from '../../../agent/model/kinds.generated.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * An upgrade 2025.1 → 2025.2 of the test cloud on the test bed under a maintenance window
 * (Saturdays 02:00 UTC for 4 h), read with an injected clock: before the window nothing
 * starts (no backup Job); the window closing while keystone upgrades lets keystone finish
 * and placement wait; plan and status say when the next window opens; then a pause before
 * glance (the kupenstack.io/pause-upgrade-at annotation's option) stops there, status says
 * paused and where, and without it the upgrade resumes at glance and ends Ready on 2025.2.
 */
const ns = 'cloud-window';
const work = mkdtempSync(join(tmpdir(), 'ks-cloud-window-'));
const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const opts: DriveOptions = { kubeConfig: kc, cloud: 'cloud-window', namespace: ns, baseDir: work, helm: charts.helm, pollMs: 300, stepDeadlineMs: 240_000 };
const v1: OpenStackCloudSpec = { release: '2025.1', chart: { repository: charts.repository } };
const v2: OpenStackCloudSpec = { ...v1, release: '2025.2', maintenanceWindow: { schedule: '0 2 * * 6', duration: '4h' } };

// 2026-11-28 is a Saturday: its window is 02:00–06:00 UTC, the next one a week later.
const beforeWindow = new Date('2026-11-27T12:00:00Z');
const inWindow = new Date('2026-11-28T03:00:00Z');
const afterWindow = new Date('2026-11-28T06:30:00Z');
const nextWindow = '2026-12-05T02:00:00.000Z';

beforeAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
});

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

const image = (name: string): Promise<string> => kubectlOk(['-n', ns, 'get', `deployment/${name}`, '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
const jobs = async (): Promise<string[]> => (await kubectlOk(['-n', ns, 'get', 'jobs', '-o', 'jsonpath={.items[*].metadata.name}'])).split(' ').filter((n) => n !== '');
const ready = (r: DriveResult) => r.status.conditions?.find((c) => c.type === 'Ready');

describe('an upgrade under a maintenance window and a pause', () => {
  it('starts nothing outside the window, finishes the running chart when it closes, pauses before glance and resumes there', async () => {
    const installed = await driveCloud(v1, opts);
    expect(installed.ready).toBe(true);
    expect(await image('keystone-api')).toMatch(/:2025\.1/);

    // Before the window: nothing starts, not even the backup; plan and status say when it opens.
    const early = await driveCloud(v2, { ...opts, now: () => beforeWindow });
    expect(early.ready).toBe(false);
    expect(early.waitUntil?.toISOString()).toBe('2026-11-28T02:00:00.000Z');
    expect(ready(early)).toMatchObject({ status: 'False', reason: 'OutsideMaintenanceWindow' });
    expect(ready(early)?.message).toContain('the next one opens at 2026-11-28T02:00:00.000Z');
    expect(early.status.upgrade?.backup).toBeUndefined();
    expect((await jobs()).filter((j) => j.startsWith('mariadb-backup'))).toEqual([]);
    expect(await image('keystone-api')).toMatch(/:2025\.1/);
    const earlyPlan = await planCloud(v2, { ...opts, now: () => beforeWindow });
    expect(earlyPlan.steps[1]).toBe('outside the maintenance window; the next one opens at 2026-11-28T02:00:00.000Z');

    // In the window: the backup and the charts up to keystone; the window closes while keystone runs.
    let clock = inWindow;
    const log: string[] = [];
    const closing = await driveCloud(v2, {
      ...opts,
      now: () => clock,
      log: (l) => {
        log.push(l);
        if (l.includes('upgrade 2025.1 → 2025.2: keystone (4 of 10)')) clock = afterWindow;
      },
    });
    expect(log.some((l) => l.includes('backup Job mariadb-backup-before-2025-2')), log.join('\n')).toBe(true);
    expect(clock, 'the keystone step started').toBe(afterWindow);
    expect(closing.ready).toBe(false);
    expect(closing.failure).toBeUndefined();
    expect(closing.waitUntil?.toISOString()).toBe(nextWindow);
    // keystone, running when the window closed, finished; placement, the next chart, did not start.
    expect(await image('keystone-api')).toMatch(/:2025\.2/);
    expect(await image('placement-api')).toMatch(/:2025\.1/);
    expect(closing.status.services?.keystone).toMatchObject({ ready: true, release: '2025.2' });
    expect(closing.status.upgrade).toMatchObject({ phase: 'Upgrading', service: 'placement', backup: `Job ${ns}/mariadb-backup-before-2025-2` });
    expect(ready(closing)).toMatchObject({ status: 'False', reason: 'OutsideMaintenanceWindow' });
    expect(ready(closing)?.message).toBe(`upgrade 2025.1 → 2025.2 waits before placement: outside the maintenance window; the next one opens at ${nextWindow}`);
    const closedPlan = await planCloud(v2, { ...opts, now: () => afterWindow });
    expect(closedPlan.steps[1]).toBe(`outside the maintenance window; the next one opens at ${nextWindow}`);
    expect(closedPlan.steps[2]).toBe(`backup: done (Job ${ns}/mariadb-backup-before-2025-2), not repeated`);
    expect(closedPlan.steps[3]).toMatch(/^5\. placement:/);
    const backupUid = await kubectlOk(['-n', ns, 'get', 'job/mariadb-backup-before-2025-2', '-o', 'jsonpath={.metadata.uid}']);

    // The next window, paused before glance: placement upgrades, glance does not start; status says paused and where.
    const pausedLog: string[] = [];
    const paused = await driveCloud(v2, { ...opts, now: () => new Date('2026-12-05T02:30:00Z'), pauseAt: 'glance', log: (l) => pausedLog.push(l) });
    expect(paused.ready).toBe(false);
    expect(paused.failure, pausedLog.join('\n')).toBeUndefined();
    expect(pausedLog.filter((l) => l.includes('upgrade 2025.1 → 2025.2:'))).toEqual([expect.stringContaining(': placement (5 of 10)')]);
    expect(await image('placement-api')).toMatch(/:2025\.2/);
    expect(await image('glance-api')).toMatch(/:2025\.1/);
    expect(paused.status.upgrade).toMatchObject({ service: 'glance', step: 'glance (paused)' });
    expect(ready(paused)).toMatchObject({ status: 'False', reason: 'UpgradePaused' });
    expect(ready(paused)?.message).toContain('paused before glance');

    // The pause removed (still in that window): resumes at glance, no second backup, Ready on 2025.2.
    const resumedLog: string[] = [];
    const resumed = await driveCloud(v2, { ...opts, now: () => new Date('2026-12-05T03:00:00Z'), log: (l) => resumedLog.push(l) });
    expect(resumed.failure, resumedLog.join('\n')).toBeUndefined();
    expect(resumed.ready).toBe(true);
    expect(resumed.status.release).toBe('2025.2');
    expect(resumedLog.find((l) => l.includes('upgrade 2025.1 → 2025.2:'))).toMatch(/: glance \(6 of 10\)/);
    expect(resumedLog.some((l) => l.includes('backup Job'))).toBe(false);
    expect(await kubectlOk(['-n', ns, 'get', 'job/mariadb-backup-before-2025-2', '-o', 'jsonpath={.metadata.uid}'])).toBe(backupUid);
    for (const name of ['glance-api', 'neutron-server', 'nova-api', 'cinder-api', 'horizon-server']) expect(await image(name), name).toMatch(/:2025\.2/);
  }, 1_200_000);
});
