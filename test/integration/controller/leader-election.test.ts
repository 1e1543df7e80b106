import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createJournalName } from '../../../agent/controller/resources/create-journal.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { OpenStackFaultProxy, type ProxiedRequest } from '../../testbed/faults/openstack-proxy.ts';
import { ControllerProcess, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Two `kupenstack controller --leader-elect` replicas against the real API server and the real
 * OpenStack, each through its own OpenStack proxy (test/testbed/faults), so what reached OpenStack
 * from each replica is known. The leader is killed -9 while Neutron holds its first network POST: the
 * other takes the Lease over, waits for what the dead one sent, adopts it (no duplicate) and makes the
 * next writes itself. Which of the three networks that POST carries depends on what the leader's
 * informer held when its run began: a quiet namespace's first change runs after 5 ms (the leading
 * edge), so the POST may carry n1 alone and the rest come in the run after it. Then the new leader is frozen (SIGSTOP) until it loses the Lease: once resumed, the
 * demoted replica sends nothing to OpenStack while the new leader's create is held.
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
const proxies: OpenStackFaultProxy[] = [];
const dir = mkdtempSync(join(tmpdir(), 'ks-leader-'));

async function networksIn(): Promise<{ id: string; name: string }[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? cloud.client('network').list('/networks', 'networks', { project_id: p.id }) : [];
}
const names = async (): Promise<string[]> => (await networksIn()).map((n) => n.name).sort();
const networks = (list: string[]): string => list.map((n) => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: ${n}, namespace: ${ns}}\nspec: {}\n`).join('---\n');
/** GET /readyz of a replica (the port it logged last). */
async function readyz(c: ControllerProcess): Promise<{ code: number; body: { status: string; leader?: boolean } }> {
  const port = [...c.log().matchAll(/serving \/healthz and \/readyz on 127\.0\.0\.1:(\d+)/g)].at(-1)?.[1];
  const r = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { code: r.status, body: (await r.json()) as { status: string; leader?: boolean } };
}
/** The identity with which a replica (since a log offset) acquired the Lease, if it did. */
const acquiredAs = (c: ControllerProcess, from = 0): string | undefined => new RegExp(`leader  (\\S+) acquired lease kupenstack-system/${lease}`).exec(c.log().slice(from))?.[1];
/** What a replica's proxy forwarded that changes OpenStack (a token request changes nothing). */
const writes = (p: OpenStackFaultProxy, from = 0): ProxiedRequest[] => p.seen.slice(from).filter((r) => r.method !== 'GET' && r.method !== 'HEAD' && !r.path.endsWith('/auth/tokens'));
const holder = (): string => kubectlOk(['get', 'lease', lease, '-n', 'kupenstack-system', '-o', 'jsonpath={.spec.holderIdentity}']);
const crId = (name: string): string => kubectlOk(['get', 'networks.kupenstack.io', name, '-n', ns, '-o', 'jsonpath={.status.id}']);

beforeAll(async () => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  kubectlOk(['create', 'namespace', ns]);
  // A label value of this run only: controllers of concurrent test runs on the shared plane leave the namespace alone, and ours leave theirs.
  kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${lease}`]);
  const kubeconfig = serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller');
  const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
  const entry = real.clouds[testCloudName]!;
  for (let i = 0; i < 2; i++) {
    const proxy = await new OpenStackFaultProxy({ seed: 1, rate: 0, slowMs: 1_000 }).start();
    proxies.push(proxy);
    // Named clouds.yaml: an input the run's secret scan knows holds a password (a clouds-N.yaml looked like output and failed the scan).
    mkdirSync(join(dir, `replica-${i}`));
    const clouds = join(dir, `replica-${i}`, 'clouds.yaml');
    writeFileSync(clouds, stringify({ clouds: { proxied: { ...entry, auth: { ...entry.auth, auth_url: proxy.authUrl } } } }), { mode: 0o600 });
    replicas.push(new ControllerProcess(kubeconfig, ['--clouds', clouds, '--cloud', 'proxied', '--owner', owner, '--project-prefix', prefix, '--resync', '3s', '--opt-in-label', `kupenstack.io/project=${lease}`, '--no-syncs', '--leader-elect', '--leader-election-id', lease, '--lease-duration', `${leaseSeconds}s`, '--renew-deadline', '3s', '--retry-period', '1s', '--listen', '127.0.0.1:0']));
  }
}, 300_000);

afterAll(async () => {
  for (const c of replicas) c.child?.kill('SIGCONT');
  const survivor = replicas.find((c) => c.child);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  // The surviving leader empties and deletes the project once the namespace is gone.
  if (survivor) await until('the project to be emptied', async () => (await networksIn()).length === 0, 120_000).catch(() => undefined);
  for (const c of replicas) await c.stop();
  for (const p of proxies) await p.stop();
  for (const n of await networksIn()) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
  for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'lease', lease, '-n', 'kupenstack-system']);
  kubectl(['delete', 'configmap', createJournalName(lease), '-n', 'kupenstack-system', '--ignore-not-found']);
  rmSync(dir, { recursive: true, force: true });
}, 300_000);

describe('kupenstack controller --leader-elect, two replicas', () => {
  it('kill -9 of the leader while Neutron holds its first network POST: the other leads within the lease duration, waits for that create, adopts it (no duplicate) and makes the next writes', { timeout: 600_000 }, async () => {
    const [leader, follower] = [replicas[0]!, replicas[1]!];
    const [leaderProxy, followerProxy] = [proxies[0]!, proxies[1]!];
    // The first replica leads (it starts alone); the second starts once it does.
    await leader.start();
    await until('the first replica to lead', () => Promise.resolve(acquiredAs(leader) !== undefined), 30_000, 200);
    await follower.start();
    const held = leaderProxy.hold('POST', /\/networks$/);
    kubectlOk(['apply', '-f', '-'], { input: networks(['n1', 'n2', 'n3']) });
    const request = await Promise.race([held.arrived, sleep(180_000).then(() => undefined)]);
    expect(request, leader.log()).toBeDefined();
    await sleep(4_000); // a resync more: a follower that acted would have sent its own create by now
    // In flight: the bulk carries all three, Neutron has none of them, and the follower sent OpenStack nothing.
    const body = JSON.parse(request!.body) as { networks?: { name: string }[]; network?: { name: string } };
    // The held create: a bulk, or one network when the leading edge's run saw only the first.
    const sent = (body.networks ?? (body.network ? [body.network] : [])).map((n) => n.name).sort();
    expect(sent.length, request!.body).toBeGreaterThan(0);
    expect(['n1', 'n2', 'n3']).toEqual(expect.arrayContaining(sent));
    // The leader's run waits on that POST, so the rest were not sent either.
    expect(writes(leaderProxy).filter((r) => r.method === 'POST' && r.path.endsWith('/networks'))).toHaveLength(1);
    expect(await networksIn()).toEqual([]);
    expect(writes(followerProxy)).toEqual([]);
    // Both are ready (a follower must stay up to take over); /readyz says which one leads.
    expect(await readyz(leader)).toEqual({ code: 200, body: { status: 'ready', leader: true } });
    expect(await readyz(follower)).toEqual({ code: 200, body: { status: 'ready', leader: false } });

    const killed = Date.now();
    leader.kill9();
    await until('the follower to lead', () => Promise.resolve(acquiredAs(follower) !== undefined), (leaseSeconds + 10) * 1000, 100);
    const takeover = Date.now() - killed;
    expect(takeover).toBeLessThan((leaseSeconds + 3) * 1000);
    expect(holder()).toBe(acquiredAs(follower));
    // The new leader finds the dead one's journal entry and waits; nothing is made while the POST is held.
    await until('the new leader to wait for the held creates', () => Promise.resolve(new RegExp(`held    ${ns}: waiting up to \\d+ s for ${sent.length} creates? an earlier run sent`).test(follower.log())), 120_000, 100);
    expect(await networksIn()).toEqual([]);
    held.release();
    expect(await held.answered).toBe(201);
    await until('the new leader to adopt them', () => Promise.resolve(['n1', 'n2', 'n3'].every((n) => kubectl(['get', 'networks.kupenstack.io', n, '-n', ns, '-o', 'jsonpath={.status.id}']).stdout !== '')), 120_000);
    const made = await networksIn();
    expect(made.map((n) => n.name).sort(), follower.log()).toEqual(['n1', 'n2', 'n3']);
    for (const n of ['n1', 'n2', 'n3']) expect(crId(n)).toBe(made.find((m) => m.name === n)!.id);
    // No duplicate (Neutron holds each name once, above); the new leader sent a network create of its
    // own only for those the dead one never sent.
    const before = writes(followerProxy).filter((r) => r.method === 'POST' && r.path.endsWith('/networks')).length;
    expect(before > 0).toBe(sent.length < 3);

    // The next write is the new leader's: its proxy forwards the create, Neutron holds one n4.
    kubectlOk(['apply', '-f', '-'], { input: networks(['n4']) });
    await until('n4 in Neutron', async () => (await names()).includes('n4'), 120_000);
    expect(writes(followerProxy).filter((r) => r.method === 'POST' && r.path.endsWith('/networks'))).toHaveLength(before + 1);
    await sleep(4_000); // a resync more: still no duplicate
    expect(await names()).toEqual(['n1', 'n2', 'n3', 'n4']);
    console.log(`[leader] controller takeover after kill -9 mid-create: ${takeover} ms (lease ${leaseSeconds} s)`);
  });

  it('a leader frozen past its lease is demoted: resumed, it sends OpenStack nothing while the new leader\'s create is held', { timeout: 600_000 }, async () => {
    const [restarted, old] = [replicas[0]!, replicas[1]!];
    const [restartedProxy, oldProxy] = [proxies[0]!, proxies[1]!];
    expect(acquiredAs(old)).toBeDefined();
    const from = restarted.log().length;
    await restarted.start();
    old.child!.kill('SIGSTOP');
    await until('the restarted replica to lead', () => Promise.resolve(acquiredAs(restarted, from) !== undefined), (leaseSeconds + 30) * 1000, 100);
    expect(holder()).toBe(acquiredAs(restarted, from));
    // The new leader's create of n5 is held: Neutron has no n5, so a demoted replica that still acted would send its own.
    const held = restartedProxy.hold('POST', /\/networks$/);
    kubectlOk(['apply', '-f', '-'], { input: networks(['n5']) });
    const request = await Promise.race([held.arrived, sleep(180_000).then(() => undefined)]);
    expect(request, restarted.log().slice(from)).toBeDefined();
    const mark = oldProxy.seen.length;
    old.child!.kill('SIGCONT');
    // Its overdue timers fire at once; two resyncs and a lease retry more.
    await sleep(8_000);
    expect(writes(oldProxy, mark)).toEqual([]);
    expect(await names()).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(await readyz(old)).toEqual({ code: 200, body: { status: 'ready', leader: false } });
    held.release();
    expect(await held.answered).toBe(201);
    await until('n5 in Neutron', async () => (await names()).includes('n5'), 120_000);
    await sleep(4_000); // a resync more: still no duplicate
    expect(await names()).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
    expect(writes(oldProxy, mark)).toEqual([]);
  });
});
