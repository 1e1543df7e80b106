import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { hmacHex } from '../../../agent/hooks/git-webhook.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * A Sync resource in the cluster, against the real kube-apiserver + KCM, the
 * test bed's Git server and the real OpenStack: Git → custom resources
 * (server-side apply as the Sync's ServiceAccount) → OpenStack networks; a
 * push announced by webhook to the controller's --listen address; prune of
 * a removed file; a kubectl edit put back; a revision with a file for a
 * namespace the ServiceAccount may not write, and an invalid one, both
 * rejected whole. Everything is read back from the API server and Neutron.
 */
const run = randomBytes(3).toString('hex');
const owner = `sy${run}`;
const nsA = `sync-cr-${run}-a`;
const nsB = `sync-cr-${run}-b`;
const system = 'kupenstack-system';
const syncName = `sync-cr-${run}`;
const optIn = `sync-cr-${run}`;
const prefix = 'ks-';
const gitSecret = `sync-cr-${run}-git`;
const hookSecret = `sync-cr-${run}-hook`;
const hookToken = randomBytes(16).toString('hex');
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
let git: TestRepo;

interface Cond { type: string; status: string; reason: string; message: string }
interface SyncStatus { lastAppliedRevision?: string; lastAttemptedRevision?: string; rejectedRevision?: string; diagnostics?: string[]; conditions?: Cond[]; history?: { revision: string; result: string }[]; inventory?: { apiVersion: string; kind: string; namespace?: string; name: string }[] }
interface NetworkCr { metadata: { name: string; deletionTimestamp?: string; labels?: Record<string, string>; managedFields?: { manager: string; operation: string }[] }; spec: { mtu?: number } }

const network = (name: string, ns: string, mtu = 1400): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  mtu: ${mtu}\n`;

function syncStatus(): SyncStatus {
  return getJson<{ status?: SyncStatus }>(['get', 'sync.kupenstack.io', syncName]).status ?? {};
}
const ready = (s: SyncStatus): Cond | undefined => s.conditions?.find((c) => c.type === 'Ready');
function networkCr(ns: string, name: string): NetworkCr | undefined {
  const r = kubectl(['get', 'network.kupenstack.io', name, '-n', ns, '-o', 'json', '--show-managed-fields']);
  return r.status === 0 ? (JSON.parse(r.stdout) as NetworkCr) : undefined;
}
const crNames = (ns: string): string[] => kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.replace(/^.*\//, '')).sort();

async function neutronNetworks(ns: string): Promise<{ id: string; name: string; mtu: number }[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? cloud.client('network').list('/networks', 'networks', { project_id: p.id }) : [];
}

/** After a rejected revision that dropped net2's file: net2's CR is not being deleted, it is still in the inventory, and Neutron still has it. */
async function nothingPruned(): Promise<void> {
  const cr = networkCr(nsA, 'net2');
  expect(cr).toBeDefined();
  expect(cr!.metadata.deletionTimestamp).toBeUndefined();
  expect(syncStatus().inventory?.map((e) => e.name)).toEqual(['net2']);
  expect((await neutronNetworks(nsA)).map((n) => n.name)).toEqual(['net2']);
}

/** The controller's --listen port, from its log. */
function listenPort(): number {
  return Number(/serving \/healthz and \/readyz on 127\.0\.0\.1:(\d+)/.exec(controller.log())?.[1]);
}

/** A Gitea push delivery for the new head, signed with the Sync's webhook secret, POSTed to the controller. */
async function pushHook(after: string, token = hookToken): Promise<{ status: number; body: { result?: string; error?: string } }> {
  const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after, repository: { clone_url: git.url } }));
  const r = await fetch(`http://127.0.0.1:${listenPort()}/hooks/${syncName}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gitea-event': 'push', 'x-gitea-delivery': randomUUID(), 'x-gitea-signature': hmacHex(token, body) },
    body,
  });
  return { status: r.status, body: (await r.json()) as { result?: string; error?: string } };
}

/** Commit, push, announce: the revision the Sync should reach. */
async function publish(files: Record<string, string | null>, message: string): Promise<string> {
  const sha = await git.commit(files, message);
  git.push();
  expect(await pushHook(sha)).toEqual({ status: 202, body: { result: 'triggered', syncs: [syncName] } });
  return `main@sha1:${sha}`;
}

beforeAll(async () => {
  // The repository's identity: kupenstack-edit in team A only.
  prepareSyncBed({ system, namespaces: [nsA, nsB], optIn, gitopsIn: nsA, gitSecret });
  kubectlOk(['create', 'secret', 'generic', hookSecret, '-n', system, `--from-literal=token=${hookToken}`]);

  git = await TestRepo.create('sync-cr');
  await git.commit({ [`team-a/net1.yaml`]: network('net1', nsA) }, 'net1');
  git.push();

  const config = join(mkdtempSync(join(tmpdir(), 'ks-sync-cr-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  // The controller as in a pod: its own ServiceAccount and deploy/rbac's ClusterRole (impersonate included); only this run's Syncs.
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), ['-c', config, '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--listen', '127.0.0.1:0', '--sync-selector', `kupenstack.io/test-run=${run}`, '--log-format', 'json']);
  await controller.start();
  // The test bed's lock (new-repo.sh) may wait behind another session's peer start.
}, 600_000);

afterAll(async () => {
  kubectl(['delete', 'sync.kupenstack.io', syncName, '--wait=false']);
  for (const ns of [nsA, nsB]) kubectl(['delete', 'networks.kupenstack.io', '--all', '-n', ns, '--wait=false']);
  await until('the networks to be deleted', async () => (await neutronNetworks(nsA)).length === 0, 120_000).catch(() => undefined);
  await controller?.stop();
  for (const ns of [nsA, nsB]) {
    for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'namespace', ns, '--wait=false']);
    for (const n of await neutronNetworks(ns)) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
    const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
    if (p) await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
  }
  kubectl(['delete', 'secret', gitSecret, hookSecret, '-n', system]);
  await git?.dispose();
}, 300_000);

describe('a Sync resource in the cluster', () => {
  it('Git → custom resources → OpenStack networks; a push announced by webhook adds one; a removed file deletes its CR and its network', async () => {
    kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'kupenstack.io/v1alpha1',
        kind: 'Sync',
        metadata: { name: syncName, labels: { 'kupenstack.io/test-run': run } },
        spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, interval: '15s', retryInterval: '2s', massDeleteThreshold: 100, serviceAccountName: 'gitops', serviceAccountNamespace: nsA, webhook: { secretRef: { name: hookSecret } } },
      }),
    });
    const first = `main@sha1:${git.head()}`;
    await until('net1 in Neutron', async () => (await neutronNetworks(nsA)).some((n) => n.name === 'net1'), 180_000, 1000);
    await until('the Sync to be Ready', () => Promise.resolve(ready(syncStatus())?.status === 'True'), 30_000);
    const st = syncStatus();
    expect(st.lastAppliedRevision).toBe(first);
    expect(st.inventory).toEqual([{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: nsA, name: 'net1' }]);
    expect(st.history?.[0]).toMatchObject({ revision: first, result: 'Succeeded' });
    const cr = networkCr(nsA, 'net1')!;
    expect(cr.metadata.labels?.['kupenstack.io/sync']).toBe(syncName);
    expect(cr.metadata.managedFields?.map((f) => `${f.manager}/${f.operation}`)).toContain(`kupenstack-sync-${syncName}/Apply`);

    // A push: the webhook through the controller's listen address starts the run (the interval is 15 s).
    const second = await publish({ 'team-a/net2.yaml': network('net2', nsA) }, 'net2');
    await until('net2 in Neutron', async () => (await neutronNetworks(nsA)).some((n) => n.name === 'net2'), 180_000, 500);
    // Every line of its log is JSON (jsonLines checks), the Sync loop's with its fields.
    expect(controller.jsonLines().filter((l) => l.msg === 'applying revision' && l.revision === second).map((l) => l.trigger)).toContain('webhook');
    expect(crNames(nsA)).toEqual(['net1', 'net2']);

    // A file removed: prune deletes the CR (as the ServiceAccount), the resource loop deletes the network.
    const third = await publish({ 'team-a/net1.yaml': null }, 'drop net1');
    await until('net1 gone from Neutron', async () => !(await neutronNetworks(nsA)).some((n) => n.name === 'net1'), 180_000, 500);
    expect(networkCr(nsA, 'net1')).toBeUndefined();
    expect((await neutronNetworks(nsA)).map((n) => n.name)).toEqual(['net2']);
    await until('the inventory to follow', () => Promise.resolve(syncStatus().lastAppliedRevision === third), 30_000);
    expect(syncStatus().inventory?.map((e) => e.name)).toEqual(['net2']);
    // A delivery signed with another secret is refused and starts nothing.
    expect((await pushHook(git.head(), 'not-the-secret')).status).toBe(401);
    // /metrics on the same port: the agent's series, per Sync.
    const metrics = await (await fetch(`http://127.0.0.1:${listenPort()}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`kupenstack_webhook_deliveries_total\\{sync="${syncName}",provider="gitea",result="triggered"\\} 2`));
    expect(metrics).toMatch(new RegExp(`kupenstack_webhook_deliveries_total\\{sync="${syncName}",provider="gitea",result="rejected"\\} 1`));
    expect(metrics).toContain(`kupenstack_last_applied_revision_info{sync="${syncName}",revision="${third}"} 1`);
    // The OpenStack side is the resource loop's, on a shared and busy cloud: its runs set the pace here.
  }, 480_000);

  it('a kubectl edit of a Git-managed field is put back on the next timed run; a label added by another manager stays', async () => {
    kubectlOk(['patch', 'network.kupenstack.io', 'net2', '-n', nsA, '--type=merge', '--field-manager', 'kubectl-edit', '-p', JSON.stringify({ metadata: { labels: { team: 'blue' } }, spec: { mtu: 1300 } })]);
    expect(networkCr(nsA, 'net2')?.spec.mtu).toBe(1300);
    await until('mtu 1400 back on the CR', () => Promise.resolve(networkCr(nsA, 'net2')?.spec.mtu === 1400), 60_000, 500);
    expect(networkCr(nsA, 'net2')?.metadata.labels).toMatchObject({ team: 'blue', 'kupenstack.io/sync': syncName });
    // And OpenStack follows the CR back.
    await until('Neutron mtu 1400', async () => (await neutronNetworks(nsA)).find((n) => n.name === 'net2')?.mtu === 1400, 180_000, 500);
  }, 300_000);

  it('a file for a namespace the ServiceAccount may not write: the revision is rejected naming the file and the Forbidden, nothing of it applied, nothing pruned', async () => {
    // It also drops net2's file: a prune before or despite the refusal would delete net2 (audit W5).
    const bad = await publish({ 'team-a/net3.yaml': network('net3', nsA), 'team-b/net.yaml': network('intruder', nsB), 'team-a/net2.yaml': null }, 'team-b');
    await until('the revision to be rejected', () => Promise.resolve(syncStatus().rejectedRevision === bad), 60_000, 500);
    const st = syncStatus();
    expect(st.diagnostics).toHaveLength(1);
    expect(st.diagnostics![0]).toMatch(new RegExp(`^team-b/net\\.yaml:5:\\d+: error \\[kubernetes\\.forbidden\\] Network/intruder at metadata\\.namespace: .*forbidden.*system:serviceaccount:${nsA}:gitops`));
    expect(ready(st)).toMatchObject({ status: 'False', reason: 'ValidationFailed' });
    expect(ready(st)?.message).toContain('team-b/net.yaml');
    // Read from the API server: neither the allowed nor the forbidden object of that revision exists.
    expect(crNames(nsA)).toEqual(['net2']);
    expect(crNames(nsB)).toEqual([]);
    await nothingPruned();
    const events = getJson<{ items: { reason: string; message: string; involvedObject: { name: string; kind: string } }[] }>(['get', 'events', '-n', 'default']).items.filter((e) => e.involvedObject.kind === 'Sync' && e.involvedObject.name === syncName);
    expect(events.map((e) => e.reason)).toContain('ValidationFailed');
  });

  it('an invalid revision: diagnostics with the repository path and line in status, nothing applied, nothing pruned; the next good push applies', async () => {
    // net2's file is still gone from the tree (previous test): this revision removes it too.
    const bad = await publish({ 'team-b/net.yaml': null, 'team-a/net4.yaml': network('net4', nsA).replace('mtu: 1400', 'mtu: lots') }, 'invalid');
    await until('the invalid revision to be rejected', () => Promise.resolve(syncStatus().rejectedRevision === bad), 60_000, 500);
    const st = syncStatus();
    expect(st.diagnostics?.[0]).toMatch(/^team-a\/net4\.yaml:7:\d+: error \[schema\.[a-z-]+\] Network\/net4 at spec\.mtu: /);
    expect(st.history?.[0]).toMatchObject({ revision: bad, result: 'Rejected' });
    expect(crNames(nsA)).toEqual(['net2']);
    await nothingPruned();

    const good = await publish({ 'team-a/net4.yaml': network('net4', nsA), 'team-a/net2.yaml': network('net2', nsA) }, 'fixed');
    await until('the good revision applied', () => Promise.resolve(syncStatus().lastAppliedRevision === good), 60_000, 500);
    expect(crNames(nsA)).toEqual(['net2', 'net3', 'net4']);
    const after = syncStatus();
    expect(after.rejectedRevision).toBeUndefined();
    expect(after.diagnostics).toBeUndefined();
    expect(ready(after)?.status).toBe('True');
  });
});
