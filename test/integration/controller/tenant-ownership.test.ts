import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Issue 47, against the real API server and the real OpenStack: a tenant (a ServiceAccount with
 * kupenstack-edit in its namespace) imports and adopts only what its namespace's project owns
 * (docs/explanation/security.md, What a namespace owns). A public flavor, another project's private
 * flavor, another namespace's key pair and another project's volume snapshot are each Stalled with
 * a reason and an Event, and each object in OpenStack is unchanged (description, marker, access list,
 * metadata). The same manifests in an admin namespace work. The controller ignores the annotation
 * kupenstack.io/project: a tenant's custom resource cannot claim another project with it.
 */
const run = randomBytes(3).toString('hex');
const owner = `to${run}`;
const prefix = 'ks-';
const optIn = `test-${run}`;
const system = 'kupenstack-system';
const tenantNs = `to-${run}-tenant`;
const adminNs = `to-${run}-admin`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);

let controller: ControllerProcess;
let tenant: string;
/** The admin project: "another project" for both namespaces. */
let adminProject = { id: '', name: '' };
let publicFlavor = '';
let privateFlavor = '';
/** Named like a key pair of another namespace (`<its project>_<name>`), of the user the controller acts as. */
const foreignKey = `${prefix}to-${run}-other_deploy`;
let volumeId = '';
let snapshotId = '';

interface Kobj {
  status?: { conditions?: { type: string; status: string; reason: string; message: string }[]; id?: string };
}

function cr(kind: string, ns: string, name: string): Kobj | undefined {
  const r = kubectl(['get', `${kind}.kupenstack.io`, name, '-n', ns, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as Kobj) : undefined;
}

const condition = (o: Kobj | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);

function events(ns: string, name: string): { reason: string; message: string; type: string }[] {
  return getJson<{ items: { reason: string; message: string; type: string; involvedObject: { name: string } }[] }>(['get', 'events', '-n', ns]).items.filter(
    (e) => e.involvedObject.name === name,
  );
}

const failWithLog = (kind: string, ns: string, name: string) => (err: unknown) => {
  throw new Error(`${(err as Error).message}\nstatus: ${JSON.stringify(cr(kind, ns, name)?.status)}\n${controller.log().slice(-3000)}`, { cause: err });
};

/** Waits for the object's Stalled condition with this reason, and its Warning Event. */
async function refused(kind: string, ns: string, name: string): Promise<string> {
  await until(`${ns}/${kind}/${name} Stalled`, () => Promise.resolve(condition(cr(kind, ns, name), 'Stalled')?.reason === 'ImportRefused'), 180_000, 1000).catch(
    failWithLog(kind, ns, name),
  );
  const o = cr(kind, ns, name)!;
  expect(condition(o, 'Stalled')!.status).toBe('True');
  expect(condition(o, 'Ready')).toMatchObject({ status: 'False', reason: 'ImportRefused' });
  await until(`the ImportRefused Event of ${name}`, () => Promise.resolve(events(ns, name).some((e) => e.reason === 'ImportRefused' && e.type === 'Warning')), 60_000);
  return condition(o, 'Stalled')!.message;
}

async function ready(kind: string, ns: string, name: string): Promise<void> {
  await until(`${ns}/${kind}/${name} Ready`, () => Promise.resolve(condition(cr(kind, ns, name), 'Ready')?.status === 'True'), 180_000, 1000).catch(
    failWithLog(kind, ns, name),
  );
}

function publicKey(): string {
  const der = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
  const key = der.subarray(der.length - 32);
  const type = Buffer.from('ssh-ed25519');
  const len = (b: Buffer): Buffer => Buffer.from([0, 0, 0, b.length]);
  return `ssh-ed25519 ${Buffer.concat([len(type), type, len(key), key]).toString('base64')} ops@example`;
}

/** What must not change when a tenant is refused: each object as OpenStack shows it to the admin. */
async function openstackState(): Promise<Record<string, unknown>> {
  const compute = await cloud.adminCompute();
  const flavor = async (id: string) => {
    const f = (await compute.get<{ flavor: Record<string, unknown> }>(`/flavors/${id}`)).flavor;
    const access = f['os-flavor-access:is_public'] === false ? (await compute.get<{ flavor_access: unknown[] }>(`/flavors/${id}/os-flavor-access`)).flavor_access : 'public';
    return { description: f.description, public: f['os-flavor-access:is_public'], access };
  };
  const key = (await compute.get<{ keypair: Record<string, unknown> }>(`/os-keypairs/${foreignKey}`)).keypair;
  const snap = (await cloud.client('volumev3').get<{ snapshot: Record<string, unknown> }>(`/snapshots/${snapshotId}`)).snapshot;
  return {
    public: await flavor(publicFlavor),
    private: await flavor(privateFlavor),
    key: { fingerprint: key.fingerprint, public_key: key.public_key },
    snapshot: { name: snap.name, description: snap.description, metadata: snap.metadata },
  };
}

/** The four manifests, the same in both namespaces. */
function manifests(ns: string): string {
  const head = (kind: string, name: string) => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n`;
  return [
    `${head('Flavor', 'pub')}  name: to-${run}-public\n  import: {id: ${publicFlavor}, adopt: true}\n  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('Flavor', 'theirs')}  name: to-${run}-private\n  import: {id: ${privateFlavor}, adopt: true}\n  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('KeyPair', 'deploy')}  managementPolicy: unmanaged\n  import: {id: ${foreignKey}}\n`,
    `${head('VolumeSnapshot', 'backup')}  managementPolicy: unmanaged\n  import: {id: ${snapshotId}}\n`,
  ].join('---\n');
}

async function cinderSettled(path: string, key: string): Promise<void> {
  for (let i = 0; i < 120; i++) {
    const o = (await cloud.client('volumev3').get<Record<string, { status: string }>>(path))[key]!;
    if (o.status === 'available') return;
    if (o.status.startsWith('error')) throw new Error(`${path}: ${o.status}`);
    await sleep(500);
  }
  throw new Error(`${path} did not become available`);
}

beforeAll(async () => {
  prepareControllerBed({ system, namespaces: [tenantNs, adminNs], optIn });
  kubectlOk(['label', 'namespace', adminNs, 'kupenstack.io/admin=true']);
  kubectlOk(['create', 'serviceaccount', 'tenant', '-n', tenantNs]);
  kubectlOk(['create', 'rolebinding', 'tenant-edit', '-n', tenantNs, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${tenantNs}:tenant`]);
  tenant = serviceAccountKubeconfig(tenantNs, 'tenant');

  const me = await cloud.whoami();
  adminProject = (await cloud.identity.get<{ project: { id: string; name: string } }>(`/projects/${me.projectId!}`)).project;
  const compute = await cloud.adminCompute();
  const flavor = async (name: string, isPublic: boolean) =>
    (await compute.post<{ flavor: { id: string } }>('/flavors', { flavor: { name, vcpus: 1, ram: 64, disk: 1, 'os-flavor-access:is_public': isPublic, description: `made by an admin (${name})` } })).flavor.id;
  publicFlavor = await flavor(`to-${run}-public`, true);
  privateFlavor = await flavor(`to-${run}-private`, false);
  await compute.post(`/flavors/${privateFlavor}/action`, { addTenantAccess: { tenant: adminProject.id } });
  await compute.post('/os-keypairs', { keypair: { name: foreignKey, public_key: publicKey(), type: 'ssh' } });
  const cinder = cloud.client('volumev3');
  volumeId = (await cinder.post<{ volume: { id: string } }>('/volumes', { volume: { name: `to-${run}-data`, size: 1 } }, [202])).volume.id;
  await cinderSettled(`/volumes/${volumeId}`, 'volume');
  snapshotId = (await cinder.post<{ snapshot: { id: string } }>('/snapshots', { snapshot: { volume_id: volumeId, name: `to-${run}-backup`, description: 'the admin project\'s', metadata: { kept: 'yes' } } }, [202]))
    .snapshot.id;
  await cinderSettled(`/snapshots/${snapshotId}`, 'snapshot');

  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs', '--no-cloud-lifecycle',
  ]);
  await controller.start();
}, 300_000);

afterAll(async () => {
  for (const ns of [tenantNs, adminNs]) kubectl(['delete', 'namespace', ns, '--wait=false']);
  await until('the namespaces to be gone', () => Promise.resolve([tenantNs, adminNs].every((ns) => kubectl(['get', 'namespace', ns]).status !== 0)), 180_000).catch(() => undefined);
  await controller?.stop();
  for (const ns of [tenantNs, adminNs])
    for (const kind of ['flavors', 'keypairs', 'volumesnapshots', 'networks']) {
      const list = kubectl(['get', `${kind}.kupenstack.io`, '-n', ns, '-o', 'name']);
      for (const name of list.stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
  const compute = await cloud.adminCompute();
  for (const id of [publicFlavor, privateFlavor].filter(Boolean)) await compute.remove(`/flavors/${id}`);
  await compute.remove(`/os-keypairs/${foreignKey}`);
  const cinder = cloud.client('volumev3');
  if (snapshotId) {
    await cinder.remove(`/snapshots/${snapshotId}`);
    await until('the snapshot to be gone', async () => (await cinder.find(`/snapshots/${snapshotId}`)) === undefined, 120_000).catch(() => undefined);
  }
  if (volumeId) await cinder.remove(`/volumes/${volumeId}`);
}, 400_000);

describe('as a tenant ServiceAccount: only what the project owns', () => {
  // First: it makes the namespace's project, which the imports below are judged against (a namespace without one reads with the agent's scope).
  it('the controller ignores kupenstack.io/project: a tenant Network naming the admin project is made in its own project', async () => {
    kubectlOk(['apply', '-f', '-'], {
      kubeconfig: tenant,
      input: `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: claimed\n  namespace: ${tenantNs}\n  annotations: {kupenstack.io/project: "${adminProject.name}"}\nspec:\n  mtu: 1400\n`,
    });
    await ready('Network', tenantNs, 'claimed');
    const [own] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${tenantNs}` });
    const id = cr('Network', tenantNs, 'claimed')!.status!.id!;
    const net = (await cloud.client('network').get<{ network: { project_id: string; name: string } }>(`/networks/${id}`)).network;
    expect(net).toMatchObject({ name: 'claimed', project_id: own!.id });
    expect(own!.id).not.toBe(adminProject.id);
    expect(await cloud.client('network').list('/networks', 'networks', { name: 'claimed', project_id: adminProject.id })).toEqual([]);
  }, 300_000);

  it("adopting a public flavor or another project's private one, importing another namespace's key pair or another project's snapshot: each Stalled with a reason and an Event, OpenStack unchanged", async () => {
    const before = await openstackState();
    kubectlOk(['apply', '-f', '-'], { kubeconfig: tenant, input: manifests(tenantNs) });
    // Visible to the project (public), so judged by the Flavor's rule: the cloud's, not the project's.
    expect(await refused('Flavor', tenantNs, 'pub')).toMatch(new RegExp(`: the Flavor ${publicFlavor} to adopt is public: the cloud's, made by an admin for every project, not this namespace's project`));
    // Another project's private flavor: the project's own token does not see it (Nova judges).
    expect(await refused('Flavor', tenantNs, 'theirs')).toContain(`import.id ${privateFlavor}: no Flavor with this id is visible to this namespace's project`);
    // The same user's key pair, named for another namespace: judged by the KeyPair's rule.
    expect(await refused('KeyPair', tenantNs, 'deploy')).toContain(`the KeyPair ${foreignKey} to import is another namespace's (its name carries project ${prefix}to-${run}-other)`);
    // Another project's snapshot: Cinder does not show it to the project's token.
    expect(await refused('VolumeSnapshot', tenantNs, 'backup')).toContain(`import.id ${snapshotId}: no VolumeSnapshot with this id is visible to this namespace's project`);
    // Several more runs (resync 5 s) and still nothing written.
    await sleep(12_000);
    expect(await openstackState()).toEqual(before);
    expect(events(tenantNs, 'pub').some((e) => e.reason === 'Adopted')).toBe(false);
  }, 600_000);

});

describe('the same manifests in an admin namespace', () => {
  it('work: the flavors adopted (the marker written), the key pair and the snapshot imported', async () => {
    // Its project first, as for the tenant.
    kubectlOk(['apply', '-f', '-'], { input: `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: base, namespace: ${adminNs}}\nspec: {mtu: 1400}\n` });
    await ready('Network', adminNs, 'base');
    kubectlOk(['apply', '-f', '-'], { input: manifests(adminNs) });
    for (const [kind, name] of [['KeyPair', 'deploy'], ['VolumeSnapshot', 'backup']] as const) await ready(kind, adminNs, name);
    for (const name of ['pub', 'theirs'])
      await until(`the Adopted Event of ${adminNs}/Flavor/${name}`, () => Promise.resolve(events(adminNs, name).some((e) => e.reason === 'Adopted')), 180_000).catch(
        failWithLog('Flavor', adminNs, name),
      );
    const after = await openstackState();
    for (const [which, name] of [['public', 'pub'], ['private', 'theirs']] as const)
      expect((after[which] as { description: string }).description).toMatch(new RegExp(`^made by an admin \\(to-${run}-${which}\\) \\[kupenstack ${owner} Flavor/${name} [0-9a-f]{8}\\]$`));
    for (const name of ['deploy', 'backup']) expect(condition(cr(name === 'deploy' ? 'KeyPair' : 'VolumeSnapshot', adminNs, name), 'Stalled')?.status ?? 'False').toBe('False');
  }, 600_000);
});
