import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { network as networkKind } from '../../../agent/kinds/network/adapter.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { withDescriptionMarker } from '../../../agent/ownership/marker.ts';
import { replaceHash } from '../../../agent/plan/diff.ts';
import { pool } from '../../../agent/util/concurrency.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Targeted runs (issue 33, point 1): a `kubectl apply` of one object in a
 * namespace of 200 is observed, planned and written alone (with what it
 * needs and what needs it), not by listing every kind of the project; the
 * full pass stays for the resync (10 minutes away here). Counted from the
 * controller's own `calls` lines (its HTTP client's counters), before and
 * after the run. And a replace still cascades: a Subnet's CIDR changed
 * (immutable, so replaced) takes the Port on it along, in Neutron. And a
 * network made outside the controller with the marker of a manifest applied
 * next is adopted by that targeted run (it reads networks by name), not made again.
 * Real kube-apiserver, Keystone and Neutron.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const owner = `tg${run}`;
const ns = `tg-${run}`;
const prefix = 'ks-';
const optIn = `test-${run}`;
const filler = 196;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;

async function projectOf(): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

const network = cloud.client('network');
async function neutron<T>(collection: 'networks' | 'subnets' | 'ports'): Promise<T[]> {
  const project = await projectOf();
  return project ? network.list<T>(`/${collection}`, collection, { project_id: project }) : [];
}

const apply = (docs: string[]): void => {
  kubectlOk(['apply', '--server-side', '-f', '-'], { input: docs.map((d) => `apiVersion: kupenstack.io/v1alpha1\n${d}`).join('\n---\n') });
};
const subnetDoc = (cidr: string): string => `kind: Subnet\nmetadata: {name: app, namespace: ${ns}}\nspec: {networkRef: {name: app}, cidr: ${cidr}}`;

/** The controller's `calls   after <ns>:` lines: its cumulative OpenStack reads and writes after each run. */
function callLines(): { reads: number; writes: number }[] {
  return [...controller.log().matchAll(new RegExp(`calls   after ${ns}: openstack (\\d+) reads, (\\d+) writes`, 'g'))].map((m) => ({ reads: Number(m[1]), writes: Number(m[2]) }));
}
/** Objects of the namespace not yet Ready at their generation. */
function notReady(): number {
  const items = (JSON.parse(kubectlOk(['get', 'networks.kupenstack.io,subnets.kupenstack.io,ports.kupenstack.io,securitygroups.kupenstack.io', '-n', ns, '-o', 'json'])) as { items: { metadata: { generation: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] } }[] }).items;
  return items.filter((o) => o.status?.observedGeneration !== o.metadata.generation || !o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length + (items.length === filler + 4 ? 0 : 1);
}
const reconciled = (): string[] => controller.log().split('\n').filter((l) => l.includes(`reconciled ${ns} `));

beforeAll(async () => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  kubectlOk(['create', 'namespace', ns]);
  kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`]);
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), ['--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '10m', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs']);
  await controller.start();
}, 300_000);

afterAll(async () => {
  // The controller would delete 200 networks one by one through their finalizers (minutes on a busy bed): it stops, and the test deletes its own objects in parallel.
  await controller?.stop();
  for (const kind of ['ports', 'subnets', 'networks', 'securitygroups']) {
    for (const name of kubectl(['get', `${kind}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  }
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  const project = await projectOf();
  if (!project) return;
  await pool(await neutron<{ id: string }>('ports'), 8, (p) => network.remove(`/ports/${p.id}`));
  // A network's subnets go with it.
  await pool(await neutron<{ id: string }>('networks'), 8, (n) => network.remove(`/networks/${n.id}`));
  for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: project })) await network.remove(`/security-groups/${g.id}`);
  await cloud.identity.remove(`/projects/${project}`);
}, 600_000);

describe('a targeted run', () => {
  it('one Network applied in a namespace of 200 objects is written after a handful of OpenStack reads, and a Subnet replaced by a CIDR change takes its Port along', async () => {
    // 200 objects: 196 networks, a security group, and a network, a subnet and a port on it. The first run is a full pass (bulk creates).
    apply([
      ...Array.from({ length: filler }, (_, i) => `kind: Network\nmetadata: {name: fill-${i}, namespace: ${ns}}\nspec: {}`),
      `kind: SecurityGroup\nmetadata: {name: web, namespace: ${ns}}\nspec: {rules: [{direction: ingress, protocol: tcp, portRangeMin: 443, portRangeMax: 443, remoteIPPrefix: 0.0.0.0/0}]}`,
      `kind: Network\nmetadata: {name: app, namespace: ${ns}}\nspec: {}`,
      subnetDoc('10.71.0.0/24'),
      `kind: Port\nmetadata: {name: p, namespace: ${ns}}\nspec: {networkRef: {name: app}, fixedIPs: [{subnetRef: {name: app}}]}`,
    ]);
    await until('the 200 objects in Neutron', async () => (await neutron('networks')).length === filler + 1 && (await neutron('ports')).length === 1, 400_000, 2_000);
    await until('every object Ready', () => Promise.resolve(notReady() === 0), 400_000, 2_000);
    await until("the last run's calls line", () => Promise.resolve(callLines().length === reconciled().length), 60_000, 200);
    const before = callLines().at(-1)!;
    const runsBefore = reconciled().length;

    apply([`kind: Network\nmetadata: {name: extra, namespace: ${ns}}\nspec: {}`]);
    await until('the new network in Neutron', async () => (await neutron<{ name: string }>('networks')).some((n) => n.name === 'extra'), 120_000, 250);
    await until("the run's calls line", () => Promise.resolve(callLines().length > runsBefore && reconciled().length > runsBefore), 60_000, 200);
    const line = reconciled()[runsBefore]!;
    const after = callLines()[runsBefore]!;
    const reads = after.reads - before.reads;
    console.log(`[targeted] ${line.replace(/^\S+ /, '')}; OpenStack calls of the run: ${reads} reads, ${after.writes - before.writes} writes`);
    expect(line).toContain('1 created');
    expect(line).toMatch(/\(targeted: 1 of 201 objects\)/);
    // A full pass lists the owner's projects and each kind the namespace holds (networks, subnets, ports, security groups): 5 reads or more. A targeted one: the project's networks.
    expect(reads, `OpenStack reads of the run that applied one Network (a full pass makes 5 or more here)`).toBeLessThanOrEqual(2);
    expect(after.writes - before.writes).toBe(1);

    // Adoption by marker in a targeted run: a network carrying the marker a create of `adopt` gives (an answer lost, another tool of this owner) is taken, not made again.
    const marker = { owner, ref: 'Network/adopt', specHash: replaceHash(networkKind, { name: 'adopt' }) };
    const made = (await network.post<{ network: { id: string } }>('/networks', { network: { name: 'adopt', project_id: await projectOf(), description: withDescriptionMarker(undefined, marker) } })).network;
    const runs1 = reconciled().length;
    apply([`kind: Network\nmetadata: {name: adopt, namespace: ${ns}}\nspec: {}`]);
    await until('the adopted network in its status', () => Promise.resolve(kubectl(['get', 'networks.kupenstack.io', 'adopt', '-n', ns, '-o', 'jsonpath={.status.id}']).stdout === made.id), 120_000, 250);
    await until('the adopting run logged', () => Promise.resolve(reconciled().length > runs1), 60_000, 200);
    expect(reconciled()[runs1]).toMatch(/0 created, .*\(targeted: 1 of 202 objects\)/);
    expect((await neutron<{ id: string; name: string }>('networks')).filter((n) => n.name === 'adopt').map((n) => n.id)).toEqual([made.id]);

    // A replace cascades: the Port on the replaced Subnet is planned with it (its dependent), detached and given an address in the new range.
    const [oldSubnet] = await neutron<{ id: string; cidr: string }>('subnets');
    const runs2 = reconciled().length;
    apply([subnetDoc('10.72.0.0/24')]);
    await until('the subnet replaced in Neutron, the port on it', async () => {
      const subnets = await neutron<{ id: string; cidr: string }>('subnets');
      const ports = await neutron<{ fixed_ips: { subnet_id: string; ip_address: string }[] }>('ports');
      return subnets.length === 1 && subnets[0]!.cidr === '10.72.0.0/24' && ports.length === 1 && ports[0]!.fixed_ips.some((f) => f.subnet_id === subnets[0]!.id);
    }, 180_000, 500);
    const [newSubnet] = await neutron<{ id: string; cidr: string }>('subnets');
    expect(newSubnet!.id).not.toBe(oldSubnet!.id);
    const [port] = await neutron<{ fixed_ips: { subnet_id: string; ip_address: string }[] }>('ports');
    expect(port!.fixed_ips.map((f) => f.ip_address.split('.').slice(0, 3).join('.'))).toEqual(['10.72.0']);
    await until('the replace run logged', () => Promise.resolve(reconciled().length > runs2), 60_000, 200);
    // Targeted: the subnet, what needs it (the port) and what they need (the network), not the 198 other networks.
    expect(reconciled().slice(runs2).join('\n')).toMatch(/\(targeted: 2 of 202 objects\)/);
  }, 900_000);
});
