import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { OpenStackFaultProxy } from '../../testbed/faults/openstack-proxy.ts';
import { slowVolumes } from '../../testbed/faults/slow-volumes.ts';
import { ControllerProcess, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Progress by requeue beyond a server's build (issue 27, point 3): a volume
 * that takes 30 s to extend, then 30 s to delete, does not hold its
 * namespace's slot meanwhile. The slowness is a SIMULATION
 * (test/testbed/faults/slow-volumes.ts): the test bed's Cinder extends and
 * deletes at once, so the OpenStack fault proxy the controller talks to shows
 * this test's volume `extending` for 30 s after its os-extend, and defers
 * its DELETE by 30 s (Cinder really holds it until then), showing it
 * `deleting`. Everything else is real. ONE namespace runs at a time
 * (--namespace-workers 1): a run that waited for the volume would hold the
 * only slot, and another namespace's Network would land only after it.
 */
const run = randomBytes(3).toString('hex');
const owner = `rw${run}`;
const nsSlow = `rw-${run}-vol`;
const nsOther = `rw-${run}-net`;
const prefix = 'ks-';
const optIn = `test-${run}`;
const volumeName = `slowvol-${run}`;
// Twice the 15 s bound the other namespace's network must land within, so the bound still proves something.
const slowMs = 30_000;
const typeA = `rw-${run}-a`;
const typeB = `rw-${run}-b`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const sim = slowVolumes({ namePrefix: volumeName, slowMs });
const typeIds: string[] = [];
let controller: ControllerProcess;
let proxy: OpenStackFaultProxy;

async function projectOf(ns: string): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

/** What Cinder itself holds (not through the proxy). */
async function volumesIn(ns: string): Promise<{ id: string; name: string; status: string; size: number; volume_type: string }[]> {
  const project = await projectOf(ns);
  return project ? cloud.client('volumev3').list('/volumes/detail', 'volumes', { all_tenants: 1, project_id: project }) : [];
}

async function networksIn(ns: string): Promise<{ id: string; name: string }[]> {
  const project = await projectOf(ns);
  return project ? cloud.client('network').list('/networks', 'networks', { project_id: project }) : [];
}

interface Kobj {
  metadata: { name: string; generation?: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
}

function volumeObject(): Kobj | undefined {
  const r = kubectl(['get', 'volumes.kupenstack.io', volumeName, '-n', nsSlow, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as Kobj) : undefined;
}

const condition = (o: Kobj | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
const volumeYaml = (size: number, type: string): string =>
  `apiVersion: kupenstack.io/v1alpha1\nkind: Volume\nmetadata: {name: ${volumeName}, namespace: ${nsSlow}}\nspec: {size: ${size}, volumeType: ${type}}\n`;

/** Another namespace's new Network while the slow namespace's volume is in OpenStack's hands: how long until Neutron has it. */
async function otherNetworkLands(name: string): Promise<number> {
  const asked = Date.now();
  kubectlOk(['apply', '-f', '-'], { input: `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: ${name}, namespace: ${nsOther}}\nspec: {}\n` });
  await until(`the other namespace's network ${name} in Neutron`, async () => (await networksIn(nsOther)).some((n) => n.name === name), 180_000, 250);
  return Date.now() - asked;
}

beforeAll(async () => {
  const repo = join(import.meta.dirname, '../../..');
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  for (const ns of [nsSlow, nsOther]) {
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`]);
  }
  // Two volume types on the test bed's one backend: the update extends, then retypes.
  for (const name of [typeA, typeB]) {
    typeIds.push((await cloud.client('volumev3').post<{ volume_type: { id: string } }>('/types', { volume_type: { name, extra_specs: { volume_backend_name: 'fake' } } })).volume_type.id);
  }
  proxy = await new OpenStackFaultProxy({ seed: 1, rate: 0, slowMs: 0, simulate: sim.simulate, requests: sim.requests }).start();
  const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
  const entry = real.clouds[testCloudName]!;
  const dir = mkdtempSync(join(tmpdir(), 'ks-requeue-waits-'));
  const clouds = join(dir, 'clouds.yaml');
  writeFileSync(clouds, stringify({ clouds: { slow: { ...entry, auth: { ...entry.auth, auth_url: proxy.authUrl } } } }), { mode: 0o600 });
  const config = join(dir, 'kupenstack.yaml');
  writeFileSync(config, 'concurrency: 4\nreadyTimeoutSeconds: 600\n');
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), ['-c', config, '--clouds', clouds, '--cloud', 'slow', '--owner', owner, '--project-prefix', prefix, '--resync', '10m', '--namespace-workers', '1', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs']);
  await controller.start();
}, 300_000);

afterAll(async () => {
  for (const ns of [nsSlow, nsOther]) kubectl(['delete', 'namespace', ns, '--wait=false']);
  try {
    await until('the projects of both namespaces to be deleted', async () => (await projectOf(nsSlow)) === undefined && (await projectOf(nsOther)) === undefined, 300_000, 2_000);
  } finally {
    await controller?.stop();
    for (const ns of [nsSlow, nsOther]) {
      for (const kind of ['volumes', 'networks']) {
        const list = kubectl(['get', `${kind}.kupenstack.io`, '-n', ns, '-o', 'name']);
        for (const name of list.stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
    }
    // Sends what the simulation still deferred: Cinder deletes it.
    await proxy?.stop();
    for (const id of typeIds) await cloud.client('volumev3').remove(`/types/${id}`).catch(() => undefined);
  }
}, 600_000);

describe('progress by requeue: volumes', () => {
  it(`a volume extending for ${slowMs / 1000} s (simulated) does not delay another namespace's Network, and is retyped once extended`, async () => {
    kubectlOk(['apply', '-f', '-'], { input: `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: first, namespace: ${nsOther}}\nspec: {}\n` });
    kubectlOk(['apply', '-f', '-'], { input: volumeYaml(1, typeA) });
    await until('the volume to be Ready', () => Promise.resolve(condition(volumeObject(), 'Ready')?.status === 'True'), 300_000, 1_000);
    await until("the other namespace's first network in Neutron", async () => (await networksIn(nsOther)).some((n) => n.name === 'first'), 180_000, 500);
    const [vol] = await volumesIn(nsSlow);
    expect(vol, 'the volume in Cinder').toBeDefined();

    kubectlOk(['apply', '-f', '-'], { input: volumeYaml(2, typeB) });
    await until('the os-extend to reach Cinder', () => Promise.resolve(sim.extended(vol!.id)), 120_000, 200);
    const extendAt = Date.now();
    const landedMs = await otherNetworkLands('during-extend');
    console.log(`[requeue-waits] the other namespace's network landed ${landedMs} ms after it was applied, while the volume was extending`);
    expect(landedMs, `the other namespace's network landed ${landedMs} ms after it was applied`).toBeLessThan(15_000);
    expect(Date.now() - extendAt, 'the network landed after the simulated extend ended: the assertion would prove nothing').toBeLessThan(slowMs);
    const during = volumeObject();
    expect(condition(during, 'Ready')?.reason, 'the volume says honestly that Cinder is still extending it').toBe('Progressing');
    expect(condition(during, 'Reconciling')?.status).toBe('True');

    // Once extended, a requeued run retypes it (no change in Kubernetes triggers it; the resync is 10 minutes away).
    await until('Cinder to show the volume grown and retyped', async () => (await volumesIn(nsSlow)).some((v) => v.id === vol!.id && v.size === 2 && v.volume_type === typeB && v.status === 'available'), 300_000, 2_000);
    await until('the volume to be Ready again', () => Promise.resolve(((o) => condition(o, 'Ready')?.status === 'True' && o?.status?.observedGeneration === o?.metadata.generation)(volumeObject())), 120_000, 1_000);
  }, 600_000);

  it(`a volume deleting for ${slowMs / 1000} s (simulated) does not delay another namespace's Network, and its object goes once Cinder's is gone`, async () => {
    const [vol] = await volumesIn(nsSlow);
    expect(vol, 'the volume in Cinder').toBeDefined();
    kubectlOk(['delete', 'volumes.kupenstack.io', volumeName, '-n', nsSlow, '--wait=false']);
    await until('the DELETE to reach the proxy', () => Promise.resolve(sim.deleted(vol!.id)), 120_000, 200);
    const deleteAt = Date.now();
    const landedMs = await otherNetworkLands('during-delete');
    console.log(`[requeue-waits] the other namespace's network landed ${landedMs} ms after it was applied, while the volume was deleting`);
    expect(landedMs, `the other namespace's network landed ${landedMs} ms after it was applied`).toBeLessThan(15_000);
    expect(Date.now() - deleteAt, 'the network landed after the simulated deletion ended: the assertion would prove nothing').toBeLessThan(slowMs);
    // Cinder still holds it: the object keeps its finalizer and says why.
    expect((await volumesIn(nsSlow)).map((v) => v.id)).toContain(vol!.id);
    const during = volumeObject();
    expect(during, 'the Volume object while Cinder still holds the volume').toBeDefined();
    expect(condition(during, 'Ready')?.reason).toBe('Progressing');
    expect(condition(during, 'Ready')?.message).toMatch(/being deleted/);

    await until('Cinder to have deleted the volume and its object to be gone', async () => volumeObject() === undefined && !(await volumesIn(nsSlow)).some((v) => v.id === vol!.id), 300_000, 2_000);
    expect(controller.log()).toMatch(new RegExp(`reconciled ${nsSlow} .* progressing \\(looked at again in \\d+ s\\)`));
  }, 600_000);
});
