import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * The queue's leading edge (issue 33, point 1): a change to a namespace that
 * had none for a debounce window runs at once, and an object that run sees
 * before what it references (the rest of the same `kubectl apply` still on
 * its way) is not rejected: no Stalled condition, no Warning Event; the run
 * after the burst makes both. A reference that stays missing is still
 * rejected, one window later. The controller runs with a 5 s window, so the
 * leading edge is told apart from the debounce by the run's own timing line,
 * not by a clock in the test. Real kube-apiserver, Keystone and Neutron.
 */
const run = randomBytes(3).toString('hex');
const ns = `le-${run}`;
const owner = `le${run}`;
const prefix = 'ks-';
const optIn = `test-${run}`;
const windowMs = 5_000;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const network = cloud.client('network');
let controller: ControllerProcess;

const apply = (doc: string): void => void kubectlOk(['apply', '-f', '-'], { input: `apiVersion: kupenstack.io/v1alpha1\n${doc}` });
const networkDoc = (name: string): string => `kind: Network\nmetadata: {name: ${name}, namespace: ${ns}}\nspec: {}`;
const subnetDoc = (name: string, cidr: string): string => `kind: Subnet\nmetadata: {name: ${name}, namespace: ${ns}}\nspec: {networkRef: {name: ${name}}, cidr: ${cidr}}`;

interface Cr {
  metadata: { generation: number };
  status?: { id?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason?: string }[] };
}
const cr = (kind: string, name: string): Cr => getJson<Cr>(['get', `${kind}.kupenstack.io`, name, '-n', ns]);
const ready = (o: Cr): boolean => o.status?.observedGeneration === o.metadata.generation && (o.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const warnings = (name: string): string[] =>
  getJson<{ items: { reason: string; type: string }[] }>(['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name}`]).items.filter((e) => e.type === 'Warning').map((e) => e.reason);

/** The `timing` lines of this namespace's runs that started from a change: when the run started after the change was seen. */
function runStarts(): number[] {
  return [...controller.log().matchAll(new RegExp(`timing  ${ns}: from the change seen at \\S+: run start \\+(\\d+) ms`, 'g'))].map((m) => Number(m[1]));
}

async function projectId(): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

beforeAll(async () => {
  prepareControllerBed({ system: 'kupenstack-system', namespaces: [ns], optIn });
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '10m', '--debounce', `${windowMs}ms`,
    '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs',
  ]);
  await controller.start();
  // The namespace's first run (a full pass: it makes the project) comes from this seed, before the cases.
  apply(networkDoc('seed'));
  await until('the seed network Ready', () => Promise.resolve(ready(cr('networks', 'seed'))), 180_000, 500);
}, 420_000);

afterAll(async () => {
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  // The controller deletes what it made through the finalizers, then the project; the test waits for the project to go.
  await until('the namespace project deleted', async () => (await projectId()) === undefined, 300_000, 2_000).catch(() => undefined);
  await controller?.stop();
  const project = await projectId();
  if (!project) return;
  for (const n of await network.list<{ id: string }>('/networks', 'networks', { project_id: project })) await network.remove(`/networks/${n.id}`);
  await cloud.identity.remove(`/projects/${project}`);
}, 420_000);

describe('the leading edge of the namespace queue', () => {
  it('a lone change runs before the debounce window ends; a Subnet seen before its Network waits for it without a Stalled flash or a Warning; a reference that stays missing is rejected one window later', async () => {
    // Quiet for a window first: the next change is a burst's first.
    await new Promise((r) => setTimeout(r, windowMs + 500));
    const before = runStarts().length;
    apply(networkDoc('lone'));
    await until('the lone network Ready', () => Promise.resolve(ready(cr('networks', 'lone'))), 120_000, 250);
    await until("the lone network's run logged", () => Promise.resolve(runStarts().length > before), 30_000, 100);
    // The run started well inside the 5 s window after the change was seen: only the leading edge does that.
    expect(runStarts()[before]!).toBeLessThan(windowMs);

    // The Subnet first, its Network in the next kubectl (well within the window): the leading run sees the Subnet alone.
    await new Promise((r) => setTimeout(r, windowMs + 500));
    apply(subnetDoc('pair', '10.73.0.0/24'));
    apply(networkDoc('pair'));
    await until('the pair Ready', () => Promise.resolve(ready(cr('subnets', 'pair')) && ready(cr('networks', 'pair'))), 180_000, 500);
    expect(controller.log()).toContain(`waiting ${ns}: ${ns}/Subnet/pair reference objects not in the namespace yet`);
    expect(warnings('pair')).toEqual([]);
    const project = await projectId();
    const [subnet] = await network.list<{ id: string; cidr: string }>('/subnets', 'subnets', { project_id: project!, name: 'pair' });
    expect(subnet?.cidr).toBe('10.73.0.0/24');
    expect(cr('subnets', 'pair').status?.id).toBe(subnet!.id);

    // No Network follows: after the window the Subnet is rejected as before (Stalled, InvalidSpec, a Warning).
    await new Promise((r) => setTimeout(r, windowMs + 500));
    apply(subnetDoc('orphan', '10.74.0.0/24'));
    await until('the orphan subnet Stalled', () => Promise.resolve((cr('subnets', 'orphan').status?.conditions ?? []).some((c) => c.type === 'Stalled' && c.status === 'True' && c.reason === 'InvalidSpec')), 120_000, 250);
    await until('its Warning Event', () => Promise.resolve(warnings('orphan').includes('InvalidSpec')), 60_000, 250);
    kubectlOk(['delete', 'subnets.kupenstack.io', 'orphan', '-n', ns]);
  }, 600_000);
});
