import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { kubectlPath } from '../../testbed/kubernetes/peer.ts';
import { adminKubeconfig, ControllerProcess, getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * What a Flux user expects of Syncs in the cluster, against the real
 * kube-apiserver, the test bed's Git server and the real OpenStack:
 * - dependsOn: the tenants' Sync, whose manifests import the network team's
 *   network, waits (DependencyNotReady, naming the dependency) and applies
 *   once the network team's Sync is Ready;
 * - wait: a Sync is Ready only once the objects it applied are Ready (the
 *   network exists in Neutron), with the counts in status.health;
 * - a dependsOn cycle stalls both Syncs, naming the cycle;
 * - suspend: a new push is not applied while suspended, and is on resume;
 * - wait: a VM that Nova puts in ERROR (os-resetState, what a failed compute
 *   host leaves) keeps the Sync not Ready, and its status names the VM;
 * - notify: that Sync's webhook (a receiver on loopback that keeps each JSON
 *   body) hears `drift-corrected` when the resource loop sets back an MTU
 *   changed in Neutron, and `failed` naming the VM when the wait fails.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const ns = `sync-ord-${run}`;
const system = 'kupenstack-system';
const optIn = `sync-ord-${run}`;
const prefix = 'ks-';
const gitSecret = `sync-ord-${run}-git`;
const nets = `nets-${run}`;
const tenants = `tenants-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
let git: TestRepo;
/** The notices the Syncs sent to their webhook, as received. */
const notices: { event: string; sync: string; revision: string; summary: string; diagnostic?: string; object?: string; severity: string }[] = [];
const hookUrl = (): string => `http://127.0.0.1:${(hookReceiver.address() as AddressInfo).port}/hook`;
const hookReceiver = createServer((req, res) => {
  let raw = '';
  req.on('data', (c: Buffer) => (raw += c.toString()));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/hook' && req.headers['x-kupenstack-event'] !== undefined) notices.push(JSON.parse(raw) as (typeof notices)[number]);
    res.writeHead(req.url === '/hook' ? 204 : 404).end();
  });
});

interface Cond { type: string; status: string; reason: string; message: string; lastTransitionTime?: string }
interface Status { lastAppliedRevision?: string; conditions?: Cond[]; health?: { ready: number; reconciling: number; stalled: number; failing?: string[] }; history?: { revision: string; startedAt: string; result: string }[] }

const status = (name: string): Status => getJson<{ status?: Status }>(['get', 'sync.kupenstack.io', name]).status ?? {};
const cond = (name: string, type = 'Ready'): Cond | undefined => status(name).conditions?.find((c) => c.type === type);
const crNames = (plural: string): string[] => kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.replace(/^.*\//, '')).sort();

async function neutron(path: 'networks' | 'subnets'): Promise<{ name: string; id: string; mtu?: number }[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? cloud.client('network').list(`/${path}`, path, { project_id: p.id }) : [];
}

function applySync(name: string, spec: Record<string, unknown>): void {
  // Other sessions on the shared bed apply their own copies of deploy/crds: ours (with dependsOn, wait) goes in again right before.
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds/syncs.kupenstack.io.yaml')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repo, 'deploy/crds/syncs.kupenstack.io.yaml')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'kupenstack.io/v1alpha1',
      kind: 'Sync',
      metadata: { name, labels: { 'kupenstack.io/test-run': run } },
      spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, interval: '5s', retryInterval: '2s', timeout: '60s', serviceAccountName: 'gitops', serviceAccountNamespace: ns, ...spec },
    }),
  });
}

// The kupenstack CLI as a person runs it: kubeconfig from $KUBECONFIG.
const env = { ...process.env, KUBECONFIG: adminKubeconfig };
const cli = (args: string[]): { status: number | null; stdout: string; stderr: string } => spawnSync(process.execPath, [join(repo, 'agent/cli/main.ts'), ...args], { encoding: 'utf8', env, timeout: 180_000 });

const network = (name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  mtu: 1400\n`;
// The tenants' files use the network team's network by import (a revision's references stay inside it): without it in Neutron, the import would wait.
const tenantFiles = {
  'tenants/shared.yaml': `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: shared-ref\n  namespace: ${ns}\nspec:\n  managementPolicy: unmanaged\n  import:\n    filter: {name: shared}\n`,
  'tenants/subnet.yaml': `apiVersion: kupenstack.io/v1alpha1\nkind: Subnet\nmetadata:\n  name: tenant-a\n  namespace: ${ns}\nspec:\n  networkRef: {name: shared-ref}\n  cidr: 10.77.0.0/24\n`,
};

beforeAll(async () => {
  await new Promise<void>((r) => hookReceiver.listen(0, '127.0.0.1', r));
  prepareSyncBed({ system, namespaces: [ns], optIn, gitopsIn: ns, gitSecret });

  git = await TestRepo.create('sync-ord');
  await git.commit({ 'nets/shared.yaml': network('shared'), ...tenantFiles }, 'nets and tenants');
  git.push();

  const config = join(mkdtempSync(join(tmpdir(), 'ks-sync-ord-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), ['-c', config, '--cloud', testCloudName, '--owner', `so${run}`, '--project-prefix', prefix, '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--listen', '127.0.0.1:0', '--sync-selector', `kupenstack.io/test-run=${run}`, '--log-format', 'json']);
  await controller.start();
}, 600_000);

afterAll(async () => {
  for (const s of [nets, tenants, `cyc-a-${run}`, `cyc-b-${run}`, `vms-${run}`]) kubectl(['delete', 'sync.kupenstack.io', s, '--wait=false']);
  for (const plural of ['virtualmachines', 'images', 'flavors', 'subnets', 'networks']) kubectl(['delete', `${plural}.kupenstack.io`, '--all', '-n', ns, '--wait=false']);
  await until('the VM to be deleted', () => Promise.resolve(kubectl(['get', 'virtualmachines.kupenstack.io', '-n', ns, '-o', 'name']).stdout.trim() === ''), 60_000).catch(() => undefined);
  await until('the networks to be deleted', async () => (await neutron('networks')).length === 0, 120_000).catch(() => undefined);
  await controller?.stop();
  for (const plural of ['virtualmachines', 'images', 'flavors', 'subnets', 'networks'])
    for (const name of kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  for (const s of await neutron('subnets')) await cloud.client('network').remove(`/subnets/${(s as { id?: string }).id ?? ''}`).catch(() => undefined);
  for (const n of await neutron('networks')) await cloud.client('network').remove(`/networks/${(n as { id?: string }).id ?? ''}`).catch(() => undefined);
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  if (p) await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
  kubectl(['delete', 'secret', gitSecret, '-n', system]);
  await git?.dispose();
  await new Promise<void>((r) => hookReceiver.close(() => r()));
}, 300_000);

describe('Syncs that depend on each other, wait for their objects, and suspend', () => {
  it("the tenants' Sync waits for the network team's Sync, saying so, and applies once it is Ready with its network in Neutron", async () => {
    applySync(tenants, { path: 'tenants', wait: true, dependsOn: [{ name: nets }] });
    await until('the tenants Sync to say what it waits for', () => Promise.resolve(cond(tenants)?.reason === 'DependencyNotReady'), 60_000, 500);
    expect(cond(tenants)?.message).toBe(`waiting: dependency ${nets} does not exist`);
    expect(crNames('subnets')).toEqual([]);

    applySync(nets, { path: 'nets', wait: true });
    // While the network team's Sync is not Ready, nothing of the tenants' revision is written.
    const subnetsBeforeReady: string[] = [];
    await until('the network team Sync to be Ready', () => {
      // The subnets first, then the condition: subnets seen before a not-Ready answer existed while it was not Ready
      // (the other order counts a subnet made in the ~200 ms between the two kubectl calls).
      const subnets = crNames('subnets');
      const ready = cond(nets)?.status === 'True';
      if (!ready) subnetsBeforeReady.push(...subnets);
      return Promise.resolve(ready);
    }, 240_000, 500);
    expect(subnetsBeforeReady).toEqual([]);
    const netsReadyAt = Date.parse(cond(nets)!.lastTransitionTime!);
    // wait: Ready means the network is in Neutron, not only written to the API server.
    expect((await neutron('networks')).map((n) => n.name)).toContain('shared');
    expect(status(nets).health).toMatchObject({ ready: 1, reconciling: 0, stalled: 0 });

    await until('the tenant subnet in Neutron', async () => (await neutron('subnets')).some((s) => s.name === 'tenant-a'), 240_000, 1000);
    await until('the tenants Sync to be Ready', () => Promise.resolve(cond(tenants)?.status === 'True'), 120_000, 500).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; its status: ${JSON.stringify(status(tenants))}`, { cause: err });
    });
    const st = status(tenants);
    expect(st.health).toMatchObject({ ready: 2, reconciling: 0, stalled: 0 });
    expect(st.lastAppliedRevision).toBe(`main@sha1:${git.head()}`);
    // Its first apply started after the dependency became Ready (condition times have second precision).
    const applies = (st.history ?? []).filter((h) => h.result === 'Succeeded');
    expect(Date.parse(applies.at(-1)!.startedAt)).toBeGreaterThanOrEqual(netsReadyAt);
    expect(controller.log()).toMatch(new RegExp(`"sync":"${tenants}"[^\\n]*"reason":"DependencyNotReady"`));
  }, 600_000);

  it('a dependsOn cycle stalls both Syncs, naming the cycle; nothing of theirs is applied', async () => {
    const a = `cyc-a-${run}`;
    const b = `cyc-b-${run}`;
    applySync(a, { path: 'nets', dependsOn: [{ name: b }] });
    applySync(b, { path: 'nets', dependsOn: [{ name: a }] });
    for (const s of [a, b]) {
      await until(`${s} to report the cycle`, () => Promise.resolve(cond(s)?.reason === 'DependencyCycle'), 60_000, 500);
      expect(cond(s)?.message).toMatch(new RegExp(`^dependsOn forms a cycle (${a} → ${b} → ${a}|${b} → ${a} → ${b}): each waits for the other forever; remove one of these dependencies$`));
      expect(cond(s, 'Stalled')).toMatchObject({ status: 'True', reason: 'DependencyCycle' });
      expect(status(s).lastAppliedRevision).toBeUndefined();
    }
  }, 120_000);

  it('kupenstack suspend sync: a new push is not applied, a reconcile request is acknowledged and not run; kupenstack resume sync applies it', async () => {
    const suspended = cli(['suspend', 'sync', nets]);
    expect(suspended.status, suspended.stderr).toBe(0);
    expect(suspended.stdout).toBe(`✔ Sync ${nets} suspended: nothing is applied or pruned until kupenstack resume sync ${nets}\n`);
    await until('the Sync to show Suspended', () => Promise.resolve(cond(nets, 'Reconciling')?.reason === 'Suspended'), 60_000, 500);
    const before = status(nets).lastAppliedRevision;
    const sha = await git.commit({ 'nets/second.yaml': network('second') }, 'second');
    git.push();
    // A reconcile request (what a push's webhook makes) is acknowledged and not run: the controller logs it, and nothing is written.
    const requestedAt = new Date().toISOString();
    kubectlOk(['annotate', '--overwrite', 'sync.kupenstack.io', nets, `kupenstack.io/reconcile-requested-at=${requestedAt}`]);
    await until('the request acknowledged as suspended', () => Promise.resolve(controller.log().includes(`"requestedAt":"${requestedAt}"`)), 60_000, 500);
    expect(controller.log()).toMatch(new RegExp(`"sync":"${nets}"[^\\n]*"requestedAt":"${requestedAt}"[^\\n]*"reason":"Suspended"`));
    expect(crNames('networks')).not.toContain('second');
    expect(status(nets).lastAppliedRevision).toBe(before);

    const resumed = cli(['resume', 'sync', nets]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe(`✔ Sync ${nets} resumed: the controller runs it now\n`);
    await until('the pushed network applied after resume', () => Promise.resolve(crNames('networks').includes('second')), 120_000, 500);
    await until('the Sync Ready at the new revision', () => Promise.resolve(status(nets).lastAppliedRevision === `main@sha1:${sha}` && cond(nets)?.status === 'True'), 240_000, 1000);
    // Ready is this revision's (with wait: its objects Ready), not the last revision's left standing.
    expect(cond(nets)?.message).toMatch(new RegExp(`^applied revision main@sha1:${sha}: .*; all 2 objects Ready$`));
    expect((await neutron('networks')).map((n) => n.name)).toContain('second');
  }, 480_000);

  it('kupenstack get syncs, kupenstack reconcile sync and kubectl kupenstack get syncs, against the test bed', () => {
    const got = cli(['get', 'syncs', '-l', `kupenstack.io/test-run=${run}`]);
    expect(got.status, got.stderr).toBe(0);
    const lines = got.stdout.trimEnd().split('\n');
    // The columns kubectl get syncs prints (the CRD's printer columns), the wait counts included.
    expect(lines[0]).toMatch(/^NAME +REVISION +SUSPENDED +READY +OBJECTS READY +STALLED +MESSAGE +AGE$/);
    expect(lines.find((l) => l.startsWith(nets))).toMatch(new RegExp(`^${nets} +main@sha1:${git.head()} +false +True +2 +0 +applied revision main@sha1:${git.head()}.* +\\d+[smhd]`));
    expect(lines.find((l) => l.startsWith(tenants))).toMatch(new RegExp(`^${tenants} +main@sha1:[0-9a-f]{40} +false +True +2 +0 `));
    const kubectlTable = kubectlOk(['get', 'sync.kupenstack.io', '-l', `kupenstack.io/test-run=${run}`]).split('\n')[0]!;
    expect(kubectlTable.trim().split(/ {2,}/)).toEqual(lines[0]!.split(/ {2,}/));
    const yaml = cli(['get', 'syncs', '-l', `kupenstack.io/test-run=${run}`, '-o', 'yaml', '--context', 'kupenstack-testbed']);
    expect(yaml.status, yaml.stderr).toBe(0);
    expect((parseYaml(yaml.stdout) as { name: string; ready: string }[]).find((r) => r.name === nets)).toMatchObject({ ready: 'True', readyObjects: 2, stalled: 0 });
    const wrongContext = cli(['get', 'syncs', '--context', `nope-${run}`]);
    expect(wrongContext.status).toBe(1);
    expect(wrongContext.stderr).toContain(`nope-${run}`);

    const rec = cli(['reconcile', 'sync', nets, '--timeout', '150s']);
    expect(rec.status, rec.stderr).toBe(0);
    expect(rec.stdout).toMatch(new RegExp(`^✔ Sync ${nets} reconciled: applied revision main@sha1:${git.head()}`));
    const handled = getJson<{ metadata: { annotations: Record<string, string> }; status: { lastHandledReconcileAt?: string } }>(['get', 'sync.kupenstack.io', nets]);
    expect(handled.status.lastHandledReconcileAt).toBe(handled.metadata.annotations['kupenstack.io/reconcile-requested-at']);
    const missing = cli(['reconcile', 'sync', `nope-${run}`]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`Sync nope-${run} does not exist in this cluster`);

    // The same binary as a kubectl plugin: kubectl finds kubectl-kupenstack on PATH.
    const bin = mkdtempSync(join(tmpdir(), 'ks-plugin-'));
    writeFileSync(join(bin, 'kubectl-kupenstack'), `#!/bin/sh\nexec "${process.execPath}" "${join(repo, 'agent/cli/main.ts')}" "$@"\n`, { mode: 0o755 });
    const plugin = spawnSync(kubectlPath, ['kupenstack', 'get', 'syncs', '-l', `kupenstack.io/test-run=${run}`], { encoding: 'utf8', env: { ...env, PATH: `${bin}:${process.env.PATH ?? ''}` }, timeout: 120_000 });
    expect(plugin.status, plugin.stderr).toBe(0);
    expect(plugin.stdout.split('\n')[0]).toMatch(/^NAME +REVISION +SUSPENDED +READY +OBJECTS READY +STALLED +MESSAGE +AGE$/);
    expect(plugin.stdout).toContain(nets);
    rmSync(bin, { recursive: true, force: true });
  }, 600_000);
  it('kupenstack get resources, tree sync and events: the objects the Syncs applied, their Ready condition and their ids in Neutron', async () => {
    const inNeutron = new Map([...(await neutron('networks')), ...(await neutron('subnets'))].map((o) => [o.name, (o as { id?: string }).id ?? '']));
    const got = cli(['get', 'resources', '-n', ns, '-o', 'json']);
    expect(got.status, got.stderr).toBe(0);
    const rows = JSON.parse(got.stdout) as { namespace: string; kind: string; name: string; ready: string; id: string }[];
    // Every custom resource of the namespace, as kubectl lists them; the managed ones carry the id Neutron has under their name.
    expect(rows.map((r) => `${r.kind}/${r.name}`).sort()).toEqual([...crNames('networks').map((n) => `Network/${n}`), ...crNames('subnets').map((n) => `Subnet/${n}`)].sort());
    const shared = rows.find((r) => r.kind === 'Network' && r.name === 'shared');
    expect(shared).toMatchObject({ namespace: ns, ready: 'True', id: inNeutron.get('shared') });
    expect(rows.find((r) => r.kind === 'Subnet' && r.name === 'tenant-a')?.id).toBe(inNeutron.get('tenant-a'));
    const table = cli(['get', 'resources', '-n', ns]).stdout.split('\n');
    expect(table[0]).toMatch(/^NAME +READY +OPENSTACK ID +MESSAGE +AGE$/);
    expect(table.find((l) => l.startsWith('network/shared '))).toMatch(new RegExp(`^network/shared +True +${inNeutron.get('shared')} `));
    expect(cli(['get', 'resources', '-A']).stdout.split('\n')[0]).toMatch(/^NAMESPACE +NAME +READY +OPENSTACK ID/);
    expect(cli(['get', 'resources', '-n', `nope-${run}`]).stdout).toBe(`No KupenStack resources found in nope-${run} namespace.\n`);

    const tree = cli(['tree', 'sync', nets]);
    expect(tree.status, tree.stderr).toBe(0);
    const lines = tree.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Sync/${nets} (Ready True, main@sha1:${git.head()})`);
    expect(lines[1]).toBe(`└── Namespace/${ns}`);
    expect(lines.slice(2)).toContain(`    └── Network/shared  Ready  openstack ${inNeutron.get('shared')}`);
    expect(cli(['tree', 'sync', `nope-${run}`]).stderr).toContain(`Sync nope-${run} does not exist in this cluster`);

    // The Events kubectl lists for KupenStack objects in the namespace, the same ones, oldest first.
    const events = cli(['events', '-n', ns, '-o', 'json']);
    expect(events.status, events.stderr).toBe(0);
    const seen = JSON.parse(events.stdout) as { object: string; reason: string; at: string }[];
    const byKubectl = getJson<{ items: unknown[] }>(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.apiVersion=kupenstack.io/v1alpha1']).items;
    expect(seen.length, 'Events recorded on the namespace objects').toBeGreaterThan(0);
    expect(seen).toHaveLength(byKubectl.length);
    expect(seen.map((e) => e.at)).toEqual([...seen.map((e) => e.at)].sort());
    expect(cli(['events', '-n', ns]).stdout.split('\n')[0]).toMatch(/^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$/);
  }, 300_000);
  it("an MTU changed in Neutron behind the controller's back: the resync sets it back, and the Sync that applied the network tells its webhook, naming the object and the field", async () => {
    applySync(nets, { path: 'nets', wait: true, notify: [{ provider: 'webhook', url: hookUrl() }] });
    const seen = (): boolean => {
      const s = getJson<{ metadata: { generation: number }; status?: { observedGeneration?: number } }>(['get', 'sync.kupenstack.io', nets]);
      return s.status?.observedGeneration === s.metadata.generation && cond(nets)?.status === 'True';
    };
    await until('the Sync to run with its notify target', () => Promise.resolve(seen()), 60_000, 500);
    const applied = status(nets).lastAppliedRevision!;
    const shared = (await neutron('networks')).find((n) => n.name === 'shared');
    await cloud.client('network').put(`/networks/${shared!.id}`, { network: { mtu: 1300 } });
    await until('the drift-corrected notice', () => Promise.resolve(notices.some((n) => n.event === 'drift-corrected')), 60_000, 500).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; notices: ${JSON.stringify(notices)}`, { cause: err });
    });
    expect(notices.filter((n) => n.event === 'drift-corrected')).toEqual([
      { event: 'drift-corrected', sync: nets, revision: applied, object: `${ns}/Network/shared`, summary: `${ns}/Network/shared: set mtu back to the declared values`, severity: 'warning', at: expect.any(String) as string },
    ]);
    expect((await neutron('networks')).find((n) => n.name === 'shared')?.mtu).toBe(1400);
  }, 120_000);

  it('with wait, a VM that goes ERROR keeps the Sync not Ready, and its status names the VM and why', async () => {
    const vms = `vms-${run}`;
    const disk = createServer((_req, res) => res.end(Buffer.alloc(64 * 1024)));
    await new Promise<void>((resolve) => disk.listen(0, '127.0.0.1', resolve));
    const failed = (): string[] => (status(vms).health?.failing ?? []).filter((f) => f.startsWith(`VirtualMachine/${ns}/web: `));
    try {
      const { port } = disk.address() as AddressInfo;
      const doc = (kind: string, name: string, spec: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec: ${spec}\n`;
      await git.commit({
        'vms/vm.yaml': [
          doc('Network', 'vm-net', '{mtu: 1400}'),
          doc('Subnet', 'vm-sub', '{networkRef: {name: vm-net}, cidr: 10.78.0.0/24}'),
          doc('Flavor', 'tiny', '{vcpus: 1, ram: 64, disk: 1}'),
          doc('Image', 'vm-disk', `{diskFormat: raw, source: {url: {url: "http://127.0.0.1:${port}/disk.raw"}}}`),
          // No healing: an ERROR stays, as after a heal that gave up.
          doc('VirtualMachine', 'web', '{flavorRef: {name: tiny}, imageRef: {name: vm-disk}, networks: [{networkRef: {name: vm-net}}], heal: {maxAttempts: 0}}'),
        ].join('---\n'),
      }, 'a VM');
      git.push();
      // A wait timeout past the build (a loaded bed): its only failure is the ERROR below, the one failed notice of the revision.
      applySync(vms, { path: 'vms', wait: true, timeout: '300s', notify: [{ provider: 'webhook', url: hookUrl() }] });
      await until('the Sync Ready with its VM ACTIVE', () => Promise.resolve(cond(vms)?.status === 'True'), 240_000, 1000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; its status: ${JSON.stringify(status(vms))}`, { cause: err });
      });
      expect(status(vms).health).toMatchObject({ ready: 5, reconciling: 0, stalled: 0 });
      const applied = status(vms).lastAppliedRevision!;

      // The fault: Nova puts the server in ERROR (what a failed compute host leaves; os-resetState, as nova reset-state --error does).
      const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
      const compute = await cloud.adminCompute();
      const [server] = (await compute.list<{ id: string; name: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id: p!.id })).filter((s) => s.name === 'web');
      await compute.post(`/servers/${server!.id}/action`, { 'os-resetState': { state: 'error' } });
      await until('the Sync to name the VM in ERROR', () => Promise.resolve(failed().length > 0 && cond(vms)?.status === 'False'), 120_000, 1000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; its status: ${JSON.stringify(status(vms))}`, { cause: err });
      });
      expect(failed()[0]).toMatch(/^VirtualMachine\/[^/]+\/web: HealGaveUp: server is in ERROR.*healing is disabled/);
      expect(cond(vms)).toMatchObject({ status: 'False', reason: 'HealthCheckFailed' });
      expect(cond(vms)?.message).toContain(`not Ready: VirtualMachine/${ns}/web: HealGaveUp: server is in ERROR`);
      expect(cond(vms, 'Stalled')).toMatchObject({ status: 'True', reason: 'HealthCheckFailed' });
      expect(status(vms).health).toMatchObject({ ready: 4, reconciling: 0, stalled: 1 });
      // What Nova reports, not what our code believes: the server is still in ERROR (nothing healed it behind the status).
      expect((await compute.get<{ server: { status: string } }>(`/servers/${server!.id}`)).server.status).toBe('ERROR');
      // The Sync's webhook hears the failure, the VM named.
      await until('the failed notice', () => Promise.resolve(notices.some((n) => n.event === 'failed' && n.sync === vms)), 30_000, 500);
      expect(notices.filter((n) => n.event === 'failed' && n.sync === vms)).toEqual([
        { event: 'failed', sync: vms, revision: applied, summary: `revision ${applied} applied, but not Ready: 4/5 objects Ready, 1 Stalled, 0 Reconciling`, diagnostic: expect.stringMatching(new RegExp(`^VirtualMachine/${ns}/web: HealGaveUp: server is in ERROR`)) as string, severity: 'error', at: expect.any(String) as string },
      ]);
    } finally {
      disk.close();
    }
  }, 420_000);
});
