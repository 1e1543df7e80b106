import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * One controller, two clouds (issue 48 part 2): two OpenStackCloudConnections standing for two
 * clouds, on the real API server and the test bed's one Keystone. They are two clouds by their
 * Keystone endpoint: connection A logs in at Keystone's own address, connection B through a TCP
 * proxy this test runs on another loopback port (node:net). The endpoint is the boundary because it
 * is what fails when a cloud (or a region's front door) goes away, and what the controller probes;
 * two project scopes of one reachable Keystone would never fail apart. B names its region
 * (RegionOne, the bed's one) to go through the connection's region override. Stopping the proxy
 * (connections refused) is B's Keystone down: B goes Stalled, its namespace's objects say so naming
 * the connection, A's namespaces keep reconciling (a new Network appears in Neutron); the proxy back,
 * B recovers without a restart and makes what waited. A tenant cannot relabel its namespace.
 */
const run = randomBytes(3).toString('hex');
const prefix = 'ks-';
const owner = `cc${run}`;
const optIn = `cc-${run}`;
const system = `cc-${run}-system`;
const connA = `a-${run}`;
const connB = `b-${run}`;
const nsA1 = `cca1-${run}`;
const nsA2 = `cca2-${run}`;
const nsB = `ccb-${run}`;
/** A namespace on the cloud of an OpenStackCloud (connection C names the OpenStackCloud, not a Secret). */
const nsC = `ccc-${run}`;
const connC = `c-${run}`;
const installed = `cci-${run}`;
const rbacName = `kupenstack-controller-connections-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const network = cloud.client('network');
let controller: ControllerProcess;

/** The bed's clouds.yaml entry (admin), for the connections' Secrets. */
function bedEntry(): Record<string, unknown> & { auth: Record<string, unknown> } {
  const file = process.env.OS_CLIENT_CONFIG_FILE ?? `${homedir()}/.config/openstack/clouds.yaml`;
  const entry = (parse(readFileSync(file, 'utf8')) as { clouds: Record<string, Record<string, unknown> & { auth: Record<string, unknown> }> }).clouds[testCloudName];
  if (!entry) throw new Error(`${file} has no cloud "${testCloudName}": start the test bed`);
  return entry;
}

/** A TCP proxy to Keystone on its own loopback port: stop() refuses connections (and cuts those open), start() takes them again on the same port. */
class KeystoneProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;
  private readonly target: { host: string; port: number };
  constructor(target: { host: string; port: number }) {
    this.target = target;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const keystoneUrl = new URL(String(bedEntry().auth.auth_url));
const proxy = new KeystoneProxy({ host: keystoneUrl.hostname, port: Number(keystoneUrl.port) });

const apply = (doc: Record<string, unknown>): void => void kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(doc) });
const networkDoc = (ns: string, name: string) => ({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name, namespace: ns }, spec: {} });

interface Conditioned {
  metadata: { generation: number };
  status?: { id?: string; observedGeneration?: number; cloud?: string; region?: string; authUrl?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}
const condition = (o: Conditioned, type: string) => o.status?.conditions?.find((c) => c.type === type);
const net = (ns: string, name: string): Conditioned => getJson<Conditioned>(['get', 'networks.kupenstack.io', name, '-n', ns]);
const connection = (name: string): Conditioned => getJson<Conditioned>(['get', 'openstackcloudconnections.kupenstack.io', name]);
const ready = (o: Conditioned): boolean => o.status?.observedGeneration === o.metadata.generation && condition(o, 'Ready')?.status === 'True';
const inNeutron = async (id: string | undefined): Promise<boolean> => id !== undefined && (await network.list<{ id: string }>('/networks', 'networks', { id })).length === 1;
const port = (): string | undefined => /serving \/healthz and \/readyz on 127\.0\.0\.1:(\d+)/.exec(controller.log())?.[1];
const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${port()}/metrics`)).text();

async function projectOf(ns: string): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

beforeAll(async () => {
  await proxy.start();
  prepareControllerBed({ system: 'kupenstack-system', namespaces: [], optIn });
  // deploy/rbac grants the connections (test/unit/rbac.test.ts checks it); the shared bed's other files apply the
  // ClusterRole from their own checkouts meanwhile, so this file binds the same rights under a name of its own.
  apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: rbacName },
    rules: [
      { apiGroups: ['kupenstack.io'], resources: ['openstackcloudconnections'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
      { apiGroups: ['kupenstack.io'], resources: ['openstackcloudconnections/status'], verbs: ['get', 'update', 'patch'] },
    ],
  });
  apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: rbacName },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: rbacName },
    subjects: [{ kind: 'ServiceAccount', name: 'kupenstack-controller', namespace: 'kupenstack-system' }],
  });
  kubectlOk(['create', 'namespace', system]);
  // The clouds.yaml of each cloud in a Secret of the admin's namespace: A at Keystone's address, B through the proxy.
  const a = { ...bedEntry() };
  const b = { ...bedEntry(), auth: { ...bedEntry().auth, auth_url: `http://127.0.0.1:${proxy.port}/v3` } };
  for (const [name, entry] of [['cloud-a', { clouds: { 'region-a': a } }], ['cloud-b', { clouds: { 'region-b': b } }]] as const)
    apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: system }, stringData: { 'clouds.yaml': stringify(entry) } });
  const spec = (secret: string, entry: string, region?: string) => ({ secretRef: { namespace: system, name: secret }, cloud: entry, ...(region ? { region } : {}) });
  apply({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloudConnection', metadata: { name: connA }, spec: spec('cloud-a', 'region-a') });
  apply({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloudConnection', metadata: { name: connB }, spec: spec('cloud-b', 'region-b', 'RegionOne') });
  for (const [ns, conn] of [[nsA1, connA], [nsA2, connA], [nsB, connB]] as const) {
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`, `kupenstack.io/cloud=${conn}`]);
  }
  // The tenant of B's namespace: kupenstack-edit there, nothing cluster-wide.
  kubectlOk(['create', 'serviceaccount', 'tenant', '-n', nsB]);
  kubectlOk(['create', 'rolebinding', 'tenant-edit', '-n', nsB, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${nsB}:tenant`]);
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '10m', '--opt-in-label', `kupenstack.io/project=${optIn}`,
    '--no-syncs', '--listen', '127.0.0.1:0', '--leader-election-id', `cc-${run}`,
  ]);
  await controller.start();
}, 300_000);

afterAll(async () => {
  await proxy.start().catch(() => undefined);
  for (const ns of [nsA1, nsA2, nsB, nsC]) kubectl(['delete', 'namespace', ns, '--wait=false']);
  // The controller deletes what it made (finalizers), then each project, in each namespace's cloud.
  for (const ns of [nsA1, nsA2, nsB, nsC]) await until(`the project of ${ns} deleted`, async () => (await projectOf(ns)) === undefined, 180_000, 2_000).catch(() => undefined);
  await controller?.stop();
  for (const ns of [nsA1, nsA2, nsB, nsC]) {
    const project = await projectOf(ns);
    if (!project) continue;
    for (const n of await network.list<{ id: string }>('/networks', 'networks', { project_id: project })) await network.remove(`/networks/${n.id}`);
    await cloud.identity.remove(`/projects/${project}`);
  }
  for (const name of [connA, connB, connC]) kubectl(['delete', 'openstackcloudconnections.kupenstack.io', name, '--wait=false']);
  kubectl(['delete', 'openstackclouds.kupenstack.io', installed, '--wait=false']);
  kubectl(['delete', 'namespace', system, '--wait=false']);
  kubectl(['delete', 'clusterrolebinding', rbacName]);
  kubectl(['delete', 'clusterrole', rbacName]);
  await proxy.stop();
}, 420_000);

describe('one controller, several clouds', () => {
  it('both connections Ready; the namespaces on each converge, their objects in OpenStack', async () => {
    await until('both connections Ready', () => Promise.resolve([connA, connB].every((n) => ready(connection(n)))), 60_000);
    const b = connection(connB);
    expect(b.status).toMatchObject({ cloud: 'region-b', region: 'RegionOne', authUrl: `http://127.0.0.1:${proxy.port}/v3` });
    // Never a credential in status (a boolean: a failure must not print the password either).
    expect(JSON.stringify(b.status).includes(String(bedEntry().auth.password))).toBe(false);
    for (const ns of [nsA1, nsA2, nsB]) apply(networkDoc(ns, 'first'));
    for (const ns of [nsA1, nsA2, nsB]) await until(`${ns}/first Ready`, () => Promise.resolve(ready(net(ns, 'first'))), 180_000);
    for (const ns of [nsA1, nsA2, nsB]) expect(await inNeutron(net(ns, 'first').status?.id), ns).toBe(true);
    expect(await metrics()).toMatch(new RegExp(`kupenstack_cloud_up\\{connection="${connB}",cloud="region-b"\\} 1`));
    // B's own calls, counted by connection and cloud: its network was made through B's client.
    expect(await metrics()).toMatch(new RegExp(`kupenstack_cloud_api_calls_total\\{connection="${connB}",cloud="region-b",service="network",method="POST",status="201"\\} [1-9]`));
  }, 420_000);

  it("B's Keystone refusing connections: B Stalled, its namespace's objects say so naming the connection; A's namespaces keep reconciling", async () => {
    await proxy.stop();
    await until('connection B Stalled', () => Promise.resolve(condition(connection(connB), 'Stalled')?.status === 'True'), 60_000);
    const stalled = condition(connection(connB), 'Ready');
    expect(stalled).toMatchObject({ status: 'False', reason: 'KeystoneUnreachable' });
    expect(stalled?.message).toContain(`127.0.0.1:${proxy.port}`);
    expect(ready(connection(connA))).toBe(true);
    // A new object in each namespace: A's appear in Neutron while B is down; B's waits.
    apply(networkDoc(nsA1, 'during'));
    apply(networkDoc(nsA2, 'during'));
    apply(networkDoc(nsB, 'during'));
    for (const ns of [nsA1, nsA2]) await until(`${ns}/during Ready`, () => Promise.resolve(ready(net(ns, 'during'))), 120_000);
    for (const ns of [nsA1, nsA2]) expect(await inNeutron(net(ns, 'during').status?.id), ns).toBe(true);
    await until(`${nsB}/during says its cloud is unreachable`, () => Promise.resolve(condition(net(nsB, 'during'), 'Stalled')?.reason === 'CloudUnreachable'), 60_000);
    const said = condition(net(nsB, 'during'), 'Ready');
    expect(said).toMatchObject({ status: 'False', reason: 'CloudUnreachable' });
    expect(said?.message).toContain(`OpenStackCloudConnection ${connB}`);
    expect(said?.message).toContain('KeystoneUnreachable');
    expect(net(nsB, 'during').status?.id).toBeUndefined();
    expect(condition(net(nsB, 'first'), 'Ready')?.reason).toBe('CloudUnreachable');
    // The earlier object keeps its OpenStack ID: nothing was forgotten, only not reconciled.
    expect(net(nsB, 'first').status?.id).toBeDefined();
    const events = getJson<{ items: { reason: string; message: string; involvedObject: { kind: string } }[] }>(['get', 'events', '-n', nsB]).items;
    expect(events.some((e) => e.reason === 'CloudUnreachable' && e.involvedObject.kind === 'Namespace' && e.message.includes(connB))).toBe(true);
    expect(await metrics()).toMatch(new RegExp(`kupenstack_cloud_up\\{connection="${connB}",cloud="region-b"\\} 0`));
  }, 300_000);

  it('the proxy back: B recovers without a restart and makes what waited', async () => {
    await proxy.start();
    await until('connection B Ready again', () => Promise.resolve(ready(connection(connB))), 90_000);
    await until(`${nsB}/during Ready`, () => Promise.resolve(ready(net(nsB, 'during'))), 120_000);
    expect(await inNeutron(net(nsB, 'during').status?.id)).toBe(true);
    await until(`${nsB}/first Ready again`, () => Promise.resolve(ready(net(nsB, 'first'))), 60_000);
    expect(condition(net(nsB, 'first'), 'Stalled')?.status).not.toBe('True');
  }, 300_000);

  it('a tenant cannot move its namespace to another cloud', () => {
    const tenant = serviceAccountKubeconfig(nsB, 'tenant');
    const relabel = kubectl(['label', 'namespace', nsB, `kupenstack.io/cloud=${connA}`, '--overwrite'], { kubeconfig: tenant });
    expect(relabel.status).not.toBe(0);
    expect(relabel.stderr).toMatch(/forbidden/i);
    const patch = kubectl(['patch', 'namespace', nsB, '--type=merge', '-p', JSON.stringify({ metadata: { labels: { 'kupenstack.io/cloud': null } } })], { kubeconfig: tenant });
    expect(patch.status).not.toBe(0);
    expect(patch.stderr).toMatch(/forbidden/i);
    expect(getJson<{ metadata: { labels: Record<string, string> } }>(['get', 'namespace', nsB]).metadata.labels['kupenstack.io/cloud']).toBe(connB);
  });

  it("an OpenStackCloud's cloud as a connection: it waits for the install's clouds.yaml Secret, then its namespace converges", async () => {
    // The OpenStackCloud stands for an install (no controller drives it: the harness's controller selects no cloud);
    // its status names the Secret an install writes once its Keystone is bootstrapped, here the bed's Keystone.
    apply({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name: installed, labels: { 'kupenstack.io/test-run': run } }, spec: { release: '2025.1' } });
    apply({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloudConnection', metadata: { name: connC }, spec: { openStackCloudRef: { name: installed } } });
    await until('connection C waiting for the install', () => Promise.resolve(condition(connection(connC), 'Ready')?.reason === 'CloudNotReady'), 60_000);
    expect(condition(connection(connC), 'Ready')?.message).toContain(`OpenStackCloud ${installed} has not written its clouds.yaml Secret yet`);
    const secretName = `kupenstack-cloud-${installed}-clouds-yaml`;
    apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace: system }, stringData: { 'clouds.yaml': stringify({ clouds: { [installed]: bedEntry() } }) } });
    const cloudsSecret = { namespace: system, name: secretName, key: 'clouds.yaml', cloud: installed };
    kubectlOk(['patch', 'openstackclouds.kupenstack.io', installed, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { cloudsSecret } })]);
    await until('connection C Ready', () => Promise.resolve(ready(connection(connC))), 90_000);
    expect(connection(connC).status?.cloud).toBe(installed);
    kubectlOk(['create', 'namespace', nsC]);
    kubectlOk(['label', 'namespace', nsC, `kupenstack.io/project=${optIn}`, `kupenstack.io/cloud=${connC}`]);
    apply(networkDoc(nsC, 'first'));
    await until(`${nsC}/first Ready`, () => Promise.resolve(ready(net(nsC, 'first'))), 180_000);
    expect(await inNeutron(net(nsC, 'first').status?.id)).toBe(true);
  }, 420_000);
});
