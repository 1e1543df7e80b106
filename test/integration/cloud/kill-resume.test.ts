import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driveCloud } from '../../../agent/cloud/drive.ts';
import { CloudStore } from '../../../agent/cloud/store.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import type { OpenStackCloudSpec } from '../../../agent/model/kinds.generated.ts';
import { Workspace } from '../../support/apply.ts';
import { runApply } from '../../support/apply-child.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * `kupenstack apply --kubeconfig` (the real CLI process) upgrading the test cloud 2025.1 →
 * 2025.2, SIGKILLed while glance's workloads wait at their gate (its api pod never becomes
 * Ready: the kwok never-ready stage), after the backup: the next run (the pod fixed) resumes
 * at glance — not at the first chart — without a second backup Job (same uid), stops before
 * neutron on the kupenstack.io/pause-upgrade-at annotation, and without it finishes Ready
 * on 2025.2.
 */
const ns = 'cloud-kill';
const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const store = new CloudStore(kc, ns, 'cloud-kill');
const env = { KUPENSTACK_HELM: charts.helm };
let ws: Workspace;

beforeAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
  ws = new Workspace();
  writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir }));
});

afterAll(async () => {
  await ws.dispose();
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

/** The repository's only manifest: the cloud at `release`, with test values and annotations. */
function writeCloud(release: string, glanceValues: Record<string, unknown> | undefined, annotations: Record<string, string> = {}): void {
  const spec = { release, namespace: ns, chart: { repository: charts.repository }, ...(glanceValues ? { services: { glance: { values: glanceValues } } } : {}) };
  ws.write({ 'cloud/openstackcloud.yaml': stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name: 'cloud-kill', ...(Object.keys(annotations).length ? { annotations } : {}) }, spec }) });
}

const image = (name: string): Promise<string> => kubectlOk(['-n', ns, 'get', `deployment/${name}`, '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
const backupJobs = async (): Promise<string[]> => (await kubectlOk(['-n', ns, 'get', 'jobs', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\\n"}{end}'])).split('\n').filter((l) => l.startsWith('mariadb-backup'));
const upgradeLines = (log: string): string[] => log.split('\n').filter((l) => l.includes('upgrade 2025.1 → 2025.2:'));

describe('an upgrade by the CLI, killed mid-step', () => {
  it('resumes at the chart it was killed in, takes no second backup, pauses on the annotation and ends Ready on 2025.2', async () => {
    const v1: OpenStackCloudSpec = { release: '2025.1', namespace: ns, chart: { repository: charts.repository } };
    const installed = await driveCloud(v1, { kubeConfig: kc, cloud: 'cloud-kill', namespace: ns, baseDir: ws.repo, helm: charts.helm, pollMs: 300, stepDeadlineMs: 240_000 });
    expect(installed.ready).toBe(true);

    // Run 1: glance's api never becomes Ready, so the run is certainly inside glance's gate when it is killed.
    writeCloud('2025.2', { test: { neverReady: { api: true } } });
    const first = runApply(ws, ['--kubeconfig', kube.kubeconfig], ws.repo, env);
    const inGate = /: glance \(6 of 10\)[\s\S]*cloud step 5:gate \[glance\]/;
    for (const deadline = Date.now() + 600_000; !inGate.test(first.stderr()); await sleep(100)) {
      if (Date.now() > deadline) throw new Error(`the CLI never reached glance's gate:\n${first.stderr()}`);
      const exited = await Promise.race([first.done, sleep(0).then(() => 'running' as const)]);
      if (exited !== 'running') throw new Error(`the CLI exited (${exited}) before glance's gate:\n${first.stderr()}`);
    }
    await sleep(1_000); // the gate has polled the never-ready pod at least once
    const atKill = (await store.load()).status;
    first.kill();
    expect(await first.done).toBeNull(); // killed by the signal, no exit code
    expect(atKill.upgrade).toMatchObject({ from: '2025.1', to: '2025.2', phase: 'Upgrading', service: 'glance', backup: `Job ${ns}/mariadb-backup-before-2025-2` });
    // Mid-step: glance's new api pod exists and is not Ready; neutron, after it, untouched.
    const hung = await kubectlOk(['-n', ns, 'get', 'pods', '-l', 'application=glance,kupenstack.test/never-ready=true', '-o', 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}']);
    expect(hung.split(' ')).toContain('False');
    expect(await image('glance-api')).toMatch(/:2025\.2/);
    expect(await image('neutron-server')).toMatch(/:2025\.1/);
    const backups = await backupJobs();
    expect(backups).toHaveLength(1);

    // Run 2 (the pod fixed), paused before neutron: resumes at glance, no second backup, stops before neutron.
    writeCloud('2025.2', undefined, { 'kupenstack.io/pause-upgrade-at': 'neutron' });
    const second = runApply(ws, ['--kubeconfig', kube.kubeconfig], ws.repo, env);
    expect(await second.done, second.stderr()).toBe(1);
    expect(upgradeLines(second.stderr()), second.stderr()).toEqual([expect.stringContaining(': glance (6 of 10)')]);
    expect(second.stderr()).not.toMatch(/backup Job/);
    expect(second.stderr()).toContain('upgrade paused before neutron');
    const paused = (await store.load()).status;
    expect(paused.upgrade).toMatchObject({ service: 'neutron', step: 'neutron (paused)' });
    expect(paused.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'UpgradePaused' });
    expect(await image('glance-api')).toMatch(/:2025\.2/);
    expect(await image('neutron-server')).toMatch(/:2025\.1/);

    // Run 3, the annotation removed: resumes at neutron and finishes; still the one backup Job of run 1.
    writeCloud('2025.2', undefined);
    const third = runApply(ws, ['--kubeconfig', kube.kubeconfig], ws.repo, env);
    expect(await third.done, third.stderr()).toBe(0);
    expect(upgradeLines(third.stderr())[0], third.stderr()).toMatch(/: neutron \(7 of 10\)/);
    expect(third.stderr()).not.toMatch(/backup Job/);
    expect(await backupJobs()).toEqual(backups);
    const done = (await store.load()).status;
    expect(done.release).toBe('2025.2');
    expect(done.upgrade?.phase).toBe('Succeeded');
    expect(done.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    for (const name of ['keystone-api', 'glance-api', 'neutron-server', 'nova-api', 'cinder-api', 'horizon-server']) expect(await image(name), name).toMatch(/:2025\.2/);
  }, 1_200_000);
});
