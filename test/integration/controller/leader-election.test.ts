import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Two `kupenstack controller --leader-elect` replicas against the real API server and the real
 * OpenStack: one acts, the other only watches; kill -9 of the leader → the other takes the Lease over
 * within the lease duration and finishes the work, without a duplicate OpenStack object.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const owner = `le${run}`;
const ns = `le-${run}`;
const prefix = 'ks-';
const lease = `le-${run}`;
const leaseSeconds = 4;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const replicas: ControllerProcess[] = [];

async function networksIn(): Promise<{ id: string; name: string }[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? cloud.client('network').list('/networks', 'networks', { project_id: p.id }) : [];
}
const networks = (names: string[]): string => names.map((n) => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: ${n}, namespace: ${ns}}\nspec: {}\n`).join('---\n');
/** GET /readyz of a replica (the port it logged). */
async function readyz(c: ControllerProcess): Promise<{ code: number; body: { status: string; leader?: boolean } }> {
  const port = /serving \/healthz and \/readyz on 127\.0\.0\.1:(\d+)/.exec(c.log())?.[1];
  const r = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { code: r.status, body: (await r.json()) as { status: string; leader?: boolean } };
}
const acquired = (c: ControllerProcess): boolean => c.log().includes(`acquired lease kupenstack-system/${lease}`);

beforeAll(async () => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  kubectlOk(['create', 'namespace', ns]);
  // A label value of this run only: controllers of concurrent test runs on the shared plane leave the namespace alone, and ours leave theirs.
  kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${lease}`]);
  const kubeconfig = serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller');
  for (let i = 0; i < 2; i++) {
    const c = new ControllerProcess(kubeconfig, ['--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '3s', '--opt-in-label', `kupenstack.io/project=${lease}`, '--leader-elect', '--leader-election-id', lease, '--lease-duration', `${leaseSeconds}s`, '--renew-deadline', '3s', '--retry-period', '1s', '--listen', '127.0.0.1:0']);
    replicas.push(c);
    await c.start();
  }
}, 300_000);

afterAll(async () => {
  const survivor = replicas.find((c) => c.child);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  // The surviving leader empties and deletes the project once the namespace is gone.
  if (survivor) await until('the project to be emptied', async () => (await networksIn()).length === 0, 120_000).catch(() => undefined);
  for (const c of replicas) await c.stop();
  for (const n of await networksIn()) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
  for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'lease', lease, '-n', 'kupenstack-system']);
}, 300_000);

describe('kupenstack controller --leader-elect, two replicas', () => {
  it('one leads and acts, the other makes no write; kill -9 of the leader → the other leads within the lease duration and finishes, no duplicates', async () => {
    await until('a leader', () => Promise.resolve(replicas.some(acquired)), 30_000, 200);
    const [leader, follower] = acquired(replicas[0]!) ? [replicas[0]!, replicas[1]!] : [replicas[1]!, replicas[0]!];
    kubectlOk(['apply', '-f', '-'], { input: networks(['n1', 'n2', 'n3']) });
    await until('three networks', async () => (await networksIn()).length === 3, 120_000);
    expect(acquired(follower)).toBe(false);
    // The follower ran no reconcile: it wrote nothing to OpenStack nor to the objects.
    expect(follower.log()).not.toMatch(/reconciled /);
    expect(leader.log()).toMatch(new RegExp(`reconciled ${ns} `));
    // Both are ready (a follower must stay up to take over); /readyz says which one leads.
    expect(await readyz(leader)).toEqual({ code: 200, body: { status: 'ready', leader: true } });
    expect(await readyz(follower)).toEqual({ code: 200, body: { status: 'ready', leader: false } });

    const killed = Date.now();
    leader.kill9();
    kubectlOk(['apply', '-f', '-'], { input: networks(['n4', 'n5', 'n6']) });
    await until('the follower to lead', () => Promise.resolve(acquired(follower)), (leaseSeconds + 10) * 1000, 100);
    const takeover = Date.now() - killed;
    expect(takeover).toBeLessThan((leaseSeconds + 3) * 1000);
    await until('six networks', async () => (await networksIn()).length === 6, 120_000);
    await new Promise((r) => setTimeout(r, 4_000)); // a resync more: still no duplicate
    const names = (await networksIn()).map((n) => n.name).sort();
    expect(names).toHaveLength(6);
    expect(new Set(names).size).toBe(6);
    console.log(`[leader] controller takeover after kill -9: ${takeover} ms (lease ${leaseSeconds} s)`);
  }, 300_000);
});
