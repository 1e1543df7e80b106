import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { hmacHex } from '../../../agent/hooks/git-webhook.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { peers } from '../../support/peers.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Issue 48 part 1, against the real kube-apiserver + KCM, the test bed's Git server and the real OpenStack:
 * a tenant (a ServiceAccount of team A with kupenstack-edit there and no cluster-wide rights) creates its own
 * NamespaceSync → its manifests applied in team A (networks in Neutron); a manifest for team B rejects the
 * whole revision with file:line; a NamespaceSync naming another namespace's ServiceAccount is refused at
 * admission; with the lockdown's default ServiceAccount a NamespaceSync without one runs as it and cannot
 * exceed its rights. Everything is read back from the API server and Neutron.
 */
const run = randomBytes(3).toString('hex');
const owner = `ns${run}`;
const nsA = `nssync-${run}-a`;
const nsB = `nssync-${run}-b`;
const system = 'kupenstack-system';
const optIn = `nssync-${run}`;
const prefix = 'ks-';
const gitSecret = 'git-credentials';
const hookSecret = 'git-hook';
const hookToken = randomBytes(16).toString('hex');
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
let git: TestRepo;
let tenant: string;

interface Cond { type: string; status: string; reason: string; message: string }
interface SyncStatus { lastAppliedRevision?: string; rejectedRevision?: string; diagnostics?: string[]; conditions?: Cond[]; inventory?: { kind: string; namespace?: string; name: string }[] }

const network = (name: string, ns: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  mtu: 1400\n`;
const securityGroup = (name: string, ns: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: SecurityGroup\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  description: over the default ServiceAccount's rights\n`;

function status(name: string): SyncStatus {
  return getJson<{ status?: SyncStatus }>(['get', 'namespacesync.kupenstack.io', name, '-n', nsA]).status ?? {};
}
const ready = (s: SyncStatus): Cond | undefined => s.conditions?.find((c) => c.type === 'Ready');
const crNames = (plural: string, ns: string): string[] => kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.replace(/^.*\//, '')).sort();

async function neutronNetworks(ns: string): Promise<string[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? (await cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: p.id })).map((n) => n.name).sort() : [];
}

/** A NamespaceSync as the tenant writes it (kubectl as the tenant's ServiceAccount). */
function nsSync(name: string, path: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'kupenstack.io/v1alpha1',
    kind: 'NamespaceSync',
    metadata: { name, namespace: nsA, labels: { 'kupenstack.io/test-run': run } },
    spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, path, interval: '5s', retryInterval: '2s', prune: true, ...extra },
  });
}

beforeAll(async () => {
  prepareControllerBed({ system, namespaces: [nsA, nsB], optIn });
  // The tenant: kupenstack-edit and kupenstack-namespacesync-edit in team A only (RoleBindings), nothing cluster-wide.
  kubectlOk(['create', 'serviceaccount', 'tenant', '-n', nsA]);
  kubectlOk(['create', 'rolebinding', 'tenant-edit', '-n', nsA, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${nsA}:tenant`]);
  kubectlOk(['create', 'rolebinding', 'tenant-nssync', '-n', nsA, '--clusterrole', 'kupenstack-namespacesync-edit', `--serviceaccount=${nsA}:tenant`]);
  // The repository's identity the tenant names: kupenstack-edit in team A.
  kubectlOk(['create', 'serviceaccount', 'gitops', '-n', nsA]);
  kubectlOk(['create', 'rolebinding', 'gitops-edit', '-n', nsA, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${nsA}:gitops`]);
  // The admin's default ServiceAccount for NamespaceSyncs that name none: Networks only.
  kubectlOk(['create', 'serviceaccount', 'restricted', '-n', nsA]);
  kubectlOk(['create', 'role', 'networks-only', '-n', nsA, '--verb=get,list,watch,create,update,patch,delete', '--resource=networks.kupenstack.io']);
  kubectlOk(['create', 'rolebinding', 'restricted-networks', '-n', nsA, '--role', 'networks-only', `--serviceaccount=${nsA}:restricted`]);
  // Team B has its own ServiceAccount, which a NamespaceSync of team A may not name.
  kubectlOk(['create', 'serviceaccount', 'gitops', '-n', nsB]);
  // The Git credentials are a Secret of team A (the admin makes it here; kupenstack-edit grants no Secrets).
  kubectlOk(['create', 'secret', 'generic', gitSecret, '-n', nsA, `--from-literal=username=${peers.git.user}`, `--from-literal=password=${peers.git.password}`]);
  // The webhook's shared secret, also of team A only (not in the controller's namespace).
  kubectlOk(['create', 'secret', 'generic', hookSecret, '-n', nsA, `--from-literal=token=${hookToken}`]);
  tenant = serviceAccountKubeconfig(nsA, 'tenant');

  git = await TestRepo.create('nssync');
  await git.commit({ 'apps/net1.yaml': network('net1', nsA), 'restricted/netr.yaml': network('netr', nsA) }, 'first');
  git.push();

  const config = join(mkdtempSync(join(tmpdir(), 'ks-nssync-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), [
    '-c', config, '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '5s',
    '--opt-in-label', `kupenstack.io/project=${optIn}`, '--sync-selector', `kupenstack.io/test-run=${run}`, '--listen', '127.0.0.1:0',
    '--tenant-default-service-account', 'restricted', '--tenant-min-interval', '2s', '--tenant-max-syncs', '2',
  ]);
  await controller.start();
}, 600_000);

afterAll(async () => {
  kubectl(['delete', 'namespacesyncs.kupenstack.io', '--all', '-n', nsA, '--wait=false']);
  for (const plural of ['networks', 'securitygroups']) kubectl(['delete', `${plural}.kupenstack.io`, '--all', '-n', nsA, '--wait=false']);
  await until('the networks to be deleted', async () => (await neutronNetworks(nsA)).length === 0, 120_000).catch(() => undefined);
  await controller?.stop();
  for (const ns of [nsA, nsB]) {
    for (const plural of ['networks', 'securitygroups'])
      for (const name of kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean))
        kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'namespace', ns, '--wait=false']);
    const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
    if (p) {
      for (const n of await cloud.client('network').list<{ id: string }>('/networks', 'networks', { project_id: p.id })) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
      await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
    }
  }
  await git?.dispose();
}, 300_000);

describe('a tenant’s NamespaceSync', () => {
  it('the tenant has no cluster-wide rights, yet creates its NamespaceSync: the manifests are applied in its namespace, as the ServiceAccount it names', async () => {
    expect(kubectl(['auth', 'can-i', 'list', 'namespacesyncs.kupenstack.io', '--all-namespaces'], { kubeconfig: tenant }).stdout.trim()).toBe('no');
    expect(kubectl(['auth', 'can-i', 'create', 'syncs.kupenstack.io'], { kubeconfig: tenant }).stdout.trim()).toBe('no');
    kubectlOk(['create', '-f', '-'], { kubeconfig: tenant, input: nsSync('apps', 'apps', { serviceAccountName: 'gitops', webhook: { secretRef: { name: hookSecret } } }) });
    const first = `main@sha1:${git.head()}`;
    await until('net1 in Neutron', async () => (await neutronNetworks(nsA)).includes('net1'), 180_000, 1000);
    await until('the NamespaceSync to be Ready', () => Promise.resolve(ready(status('apps'))?.status === 'True'), 60_000);
    const st = status('apps');
    expect(st.lastAppliedRevision).toBe(first);
    expect(st.inventory).toEqual([{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: nsA, name: 'net1' }]);
    const cr = getJson<{ metadata: { labels?: Record<string, string> } }>(['get', 'network.kupenstack.io', 'net1', '-n', nsA]);
    expect(cr.metadata.labels?.['kupenstack.io/sync']).toBe('apps');
    // The tenant reads its own NamespaceSync's status (kupenstack-view/edit include the kind).
    expect(kubectl(['get', 'namespacesync.kupenstack.io', 'apps', '-n', nsA], { kubeconfig: tenant }).status).toBe(0);
  }, 300_000);

  it('a manifest for another namespace rejects the whole revision with its file and line; nothing of it is applied', async () => {
    const sha = await git.commit({ 'apps/net2.yaml': network('net2', nsA), 'apps/intruder.yaml': network('intruder', nsB) }, 'team-b');
    git.push();
    const bad = `main@sha1:${sha}`;
    await until('the revision to be rejected', () => Promise.resolve(status('apps').rejectedRevision === bad), 90_000, 500);
    const st = status('apps');
    expect(st.diagnostics).toHaveLength(1);
    expect(st.diagnostics![0]).toMatch(new RegExp(`^apps/intruder\\.yaml:5:\\d+: error \\[sync\\.namespace\\] Network/intruder at metadata\\.namespace: namespace ${nsB} is not this NamespaceSync's namespace ${nsA}`));
    expect(ready(st)).toMatchObject({ status: 'False', reason: 'ValidationFailed' });
    expect(crNames('networks', nsA)).toEqual(['net1']);
    expect(crNames('networks', nsB)).toEqual([]);
    expect(await neutronNetworks(nsA)).toEqual(['net1']);
    // The Event is in the NamespaceSync's own namespace, where the tenant reads it.
    const events = getJson<{ items: { reason: string; involvedObject: { kind: string; name: string } }[] }>(['get', 'events', '-n', nsA]).items;
    expect(events.filter((e) => e.involvedObject.kind === 'NamespaceSync' && e.involvedObject.name === 'apps').map((e) => e.reason)).toContain('ValidationFailed');
    // Put right: the next revision applies.
    const good = `main@sha1:${await git.commit({ 'apps/intruder.yaml': null }, 'fixed')}`;
    git.push();
    await until('the good revision applied', () => Promise.resolve(status('apps').lastAppliedRevision === good), 90_000, 500);
    expect(crNames('networks', nsA)).toEqual(['net1', 'net2']);
  }, 300_000);

  it('a push announced to POST /hooks/<namespace>/<name>, verified with the Secret of its namespace, requests a run; another secret is refused', async () => {
    const port = Number(/serving \/healthz and \/readyz on 127\.0\.0\.1:(\d+)/.exec(controller.log())?.[1]);
    const sha = await git.commit({ 'apps/net5.yaml': network('net5', nsA) }, 'net5');
    git.push();
    const deliver = async (token: string): Promise<{ status: number; body: unknown }> => {
      const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after: sha, repository: { clone_url: git.url } }));
      const r = await fetch(`http://127.0.0.1:${port}/hooks/${nsA}/apps`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gitea-event': 'push', 'x-gitea-delivery': randomUUID(), 'x-gitea-signature': hmacHex(token, body) },
        body,
      });
      return { status: r.status, body: await r.json() };
    };
    expect((await deliver('not-the-secret')).status).toBe(401);
    expect(await deliver(hookToken)).toEqual({ status: 202, body: { result: 'triggered', syncs: [`${nsA}/apps`] } });
    const annotations = getJson<{ metadata: { annotations?: Record<string, string> } }>(['get', 'namespacesync.kupenstack.io', 'apps', '-n', nsA]).metadata.annotations;
    expect(annotations?.['kupenstack.io/reconcile-requested-at']).toBeDefined();
    await until('net5 applied', () => Promise.resolve(status('apps').lastAppliedRevision === `main@sha1:${sha}`), 90_000, 500);
  }, 300_000);

  it("a NamespaceSync naming another namespace's ServiceAccount is refused at admission", () => {
    const r = kubectl(['create', '-f', '-'], { kubeconfig: tenant, input: nsSync('borrow', 'apps', { serviceAccountName: 'gitops', serviceAccountNamespace: nsB }) });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('a NamespaceSync runs as a ServiceAccount of its own namespace: remove serviceAccountNamespace');
    expect(kubectl(['get', 'namespacesync.kupenstack.io', 'borrow', '-n', nsA]).status).not.toBe(0);
  });

  it("with the lockdown, a NamespaceSync without a ServiceAccount runs as the admin's default one and cannot exceed its rights", async () => {
    kubectlOk(['create', '-f', '-'], { kubeconfig: tenant, input: nsSync('nosa', 'restricted') });
    await until('netr applied', () => Promise.resolve(status('nosa').lastAppliedRevision !== undefined), 90_000, 500);
    expect(status('nosa').inventory?.map((e) => e.name)).toEqual(['netr']);
    await until('netr in Neutron', async () => (await neutronNetworks(nsA)).includes('netr'), 180_000, 1000);
    // A SecurityGroup: kupenstack-edit would allow it, the default ServiceAccount does not.
    const bad = `main@sha1:${await git.commit({ 'restricted/sg.yaml': securityGroup('sg1', nsA) }, 'over the rights')}`;
    git.push();
    await until('the revision to be rejected', () => Promise.resolve(status('nosa').rejectedRevision === bad), 90_000, 500);
    const st = status('nosa');
    expect(st.diagnostics?.[0]).toMatch(new RegExp(`^restricted/sg\\.yaml:\\d+:\\d+: error \\[kubernetes\\.forbidden\\] SecurityGroup/sg1 .*system:serviceaccount:${nsA}:restricted`));
    expect(crNames('securitygroups', nsA)).toEqual([]);
  }, 300_000);

  it('the limits per namespace: an interval under the floor is Stalled, a third NamespaceSync waits until one of the two is deleted', async () => {
    const stalled = (name: string): Cond | undefined => status(name).conditions?.find((c) => c.type === 'Stalled' && c.status === 'True');
    kubectlOk(['create', '-f', '-'], { kubeconfig: tenant, input: nsSync('hasty', 'extra', { serviceAccountName: 'gitops', interval: '1s' }) });
    await until('hasty Stalled', () => Promise.resolve(stalled('hasty') !== undefined), 60_000, 500);
    expect(ready(status('hasty'))?.message).toContain("spec.interval: below the cluster's floor for NamespaceSyncs, 2s (--tenant-min-interval)");
    kubectlOk(['delete', 'namespacesync.kupenstack.io', 'hasty', '-n', nsA]);
    await git.commit({ 'extra/netx.yaml': network('netx', nsA) }, 'extra');
    git.push();
    kubectlOk(['create', '-f', '-'], { kubeconfig: tenant, input: nsSync('extra', 'extra', { serviceAccountName: 'gitops' }) });
    await until('extra Stalled by the limit', () => Promise.resolve(stalled('extra') !== undefined), 60_000, 500);
    expect(ready(status('extra'))?.message).toContain(`namespace ${nsA} already has 2 NamespaceSyncs, the cluster's limit (--tenant-max-syncs)`);
    expect(crNames('networks', nsA)).not.toContain('netx');
    kubectlOk(['delete', 'namespacesync.kupenstack.io', 'nosa', '-n', nsA]);
    await until('extra applied once there is room', () => Promise.resolve(crNames('networks', nsA).includes('netx')), 90_000, 500);
  }, 300_000);
});
