import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CloudStore } from '../../../agent/cloud/store.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { AgentProcess, head, networksIn, TestRepo } from '../../support/agent-harness.ts';
import { peers } from '../../support/peers.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube, kubectl } from '../../testbed/kubernetes/peer.ts';

/**
 * `kupenstack agent --kubeconfig` with a Git Sync (the test bed's Git server) whose revision
 * declares an OpenStackCloud and a Network: the agent drives the cloud (test charts on the test bed)
 * before the resources; while the cloud is not Ready (keystone's db-sync fails: the kwok
 * failure stage) the run fails with CloudNotReady and the Network is not created; fixed,
 * the cloud ends Ready and the Network appears in OpenStack.
 */
const ns = 'cloud-agent';
const agent = new AgentProcess();
const repo = new TestRepo('cloud-agent');
const passwordFile = join(agent.dir, 'git-password');
const store = new CloudStore(loadKubeConfig({ kubeconfig: kube.kubeconfig }), ns, 'cloud-agent');

/** Commits and pushes the cloud (keystone's values, if any) beside the team's Network: a `git push` as a user does it. */
function pushCloud(keystoneValues?: Record<string, unknown>): string {
  const spec = { release: '2025.1', namespace: ns, chart: { repository: charts.repository }, ...(keystoneValues ? { services: { keystone: { values: keystoneValues } } } : {}) };
  repo.write({ 'cloud/openstackcloud.yaml': stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name: 'cloud-agent' }, spec }), 'team/net.yaml': `${head('Network', 'after-cloud', 'team')}  mtu: 1400\n` });
  const sha = repo.commit(keystoneValues ? 'cloud with a failing keystone db-sync' : 'cloud fixed');
  repo.push();
  return sha;
}

beforeAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
  writeFileSync(passwordFile, `${peers.git.password}\n`);
});

afterAll(async () => {
  await agent.dispose(['local']);
  repo.dispose();
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

describe('kupenstack agent --kubeconfig', () => {
  it('drives the revision\'s OpenStackCloud first; its resources wait until the cloud is Ready', async () => {
    pushCloud({ test: { fail: { 'db-sync': true } } });
    agent.configure([{ name: 'local', source: { git: { url: repo.url, ref: { branch: 'main' }, username: peers.git.user, passwordFile } }, interval: '3s', retryInterval: '2s', timeout: '5m' }]); // a run's timeout (default: the interval) must cover the cloud's steps
    await agent.start({ KUPENSTACK_HELM: charts.helm }, ['--kubeconfig', kube.kubeconfig]);

    const blocked = await agent.waitFor('local', 'CloudNotReady', (s) => s.conditions.some((c) => c.type === 'Ready' && c.status === 'False' && c.reason === 'CloudNotReady'), 300_000);
    expect(agent.ready(blocked).message).toMatch(/OpenStackCloud cloud-agent is not Ready: .*keystone-db-sync.*; 1 resources wait for it/s);
    expect((await store.load()).status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(await networksIn(`${agent.owner}-team`)).toEqual([]);

    const fixed = pushCloud();
    const done = await agent.waitFor('local', 'applied', (s) => s.lastAppliedRevision?.endsWith(fixed) === true && s.conditions.some((c) => c.type === 'Ready' && c.status === 'True'), 600_000);
    // Every run before it failed on the cloud and created nothing; the first that passed it created the Network.
    const firstOk = done.history.findLast((h) => h.result === 'Succeeded');
    expect(firstOk?.counts).toMatchObject({ created: 1, failed: 0 });
    const failedRuns = done.history.filter((h) => h.result === 'Failed');
    // Audit W9: .every is true for []; the runs that met the cloud not Ready must be there to be judged.
    expect(failedRuns.length, 'runs before the cloud was Ready').toBeGreaterThan(0);
    expect(failedRuns.every((h) => /OpenStackCloud cloud-agent is not Ready/.test(h.message ?? ''))).toBe(true);
    const cloud = (await store.load()).status;
    expect(cloud.release).toBe('2025.1');
    expect(cloud.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect((await networksIn(`${agent.owner}-team`)).map((n) => n.name)).toEqual(['after-cloud']);
    expect(agent.lines.some((l) => l.msg.startsWith('cloud cloud-agent: Ready (release 2025.1'))).toBe(true);
  }, 900_000);
});
