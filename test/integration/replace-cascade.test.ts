import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { subnet as subnetAdapter } from '../../agent/kinds/subnet/adapter.ts';
import { parseDescriptionMarker } from '../../agent/ownership/marker.ts';
import { replaceHash } from '../../agent/plan/diff.ts';
import type { Plan } from '../../agent/plan/plan.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

/**
 * A subnet in use (a router interface and a port on it) replaced by a CIDR
 * change: the plan shows the cascade as destructive, apply carries it out,
 * and Neutron ends with everything on the new subnet and nothing left over.
 */

let ws: Workspace;
const ns = 'cascade';

interface NeutronPort {
  id: string;
  name: string;
  device_owner: string;
  device_id: string;
  fixed_ips: { subnet_id: string; ip_address: string }[];
}

const files = (cidr: string, ipVersion = ''): Record<string, string> => ({
  'net.yaml': [
    `${head('Network', 'net', ns)}  mtu: 1400\n`,
    `${head('Subnet', 'sub', ns)}  networkRef: {name: net}\n  cidr: ${cidr}\n${ipVersion}`,
    `${head('Router', 'r', ns)}  interfaces: [{subnetRef: {name: sub}}]\n`,
    `${head('Port', 'p', ns)}  networkRef: {name: net}\n  fixedIPs: [{subnetRef: {name: sub}}]\n`,
  ].join('---\n'),
});

async function plan(): Promise<Plan> {
  const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined });
  expect(outcome.diagnostics).toEqual([]);
  expect(outcome.report!.errors).toEqual([]);
  expect(outcome.report!.apiCalls.write).toBe(0);
  return outcome.report!;
}

async function neutron(): Promise<{ subnets: { id: string; cidr: string; description: string }[]; ports: NeutronPort[]; routerId: string; netId: string }> {
  const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === ns)!;
  const network = ws.cloud.client('network');
  const [net] = await network.list<{ id: string }>('/networks', 'networks', { name: 'net', project_id: project.id });
  const [router] = await network.list<{ id: string }>('/routers', 'routers', { name: 'r', project_id: project.id });
  const subnets = await network.list<{ id: string; cidr: string; description: string }>('/subnets', 'subnets', { network_id: net!.id });
  const ports = await network.list<NeutronPort>('/ports', 'ports', { network_id: net!.id });
  return { subnets, ports, routerId: router!.id, netId: net!.id };
}

beforeAll(async () => {
  ws = new Workspace();
  ws.write(files('10.96.0.0/24', '  ipVersion: 4\n'));
  const first = await ws.apply();
  expect(first.report, ws.log.join('\n')).toMatchObject({ created: 4, errors: [] });
}, 300_000);
afterAll(async () => {
  await ws.dispose();
});

describe('a replace cascades through what uses the replaced object', () => {
  it('a subnet whose ipVersion line is removed gets a fresh spec hash in its marker, and nothing else changes', async () => {
    const before = await neutron();
    const oldMarker = parseDescriptionMarker(before.subnets[0]!.description).marker!;
    ws.write(files('10.96.0.0/24'));
    const r = await ws.apply();
    expect(r.report, ws.log.join('\n')).toMatchObject({ created: 0, replaced: 0, errors: [] });
    const after = await neutron();
    expect(after.subnets.map((s) => s.id)).toEqual(before.subnets.map((s) => s.id));
    const marker = parseDescriptionMarker(after.subnets[0]!.description).marker!;
    const expected = replaceHash(subnetAdapter, { name: 'sub', network_id: after.netId, cidr: '10.96.0.0/24' });
    expect(oldMarker.specHash).not.toBe(expected);
    expect(marker).toEqual({ ...oldMarker, specHash: expected });
    expect((await plan()).changes).toEqual([]);
  }, 300_000);

  it('changing the CIDR of a subnet with a router interface and a port on it: planned as destructive, applied, everything on the new subnet', async () => {
    const before = await neutron();
    const oldSubnet = before.subnets[0]!.id;
    ws.write(files('10.97.0.0/24'));

    const p = await plan();
    const byAddress = new Map(p.changes.map((c) => [c.address, c]));
    expect(p.changes.map((c) => `${c.action} ${c.address}`).sort()).toEqual([`replace ${ns}/Subnet/sub`, `update ${ns}/Port/p`, `update ${ns}/Router/r`]);
    const sub = byAddress.get(`${ns}/Subnet/sub`)!;
    expect(sub.destructive).toBe(true);
    expect(sub.reasons.map((r) => r.message).join()).toMatch(/detaches (Port\/p, Router\/r|Router\/r, Port\/p) first/);
    for (const dependent of [`${ns}/Port/p`, `${ns}/Router/r`]) {
      expect(byAddress.get(dependent)!.destructive).toBe(true);
      expect(byAddress.get(dependent)!.detachFrom).toEqual([`${ns}/Subnet/sub`]);
    }

    const r = await ws.apply();
    expect(r.report, ws.log.join('\n')).toMatchObject({ replaced: 1, updated: 2, errors: [] });

    const after = await neutron();
    expect(after.subnets.map((s) => s.cidr)).toEqual(['10.97.0.0/24']);
    const newSubnet = after.subnets[0]!.id;
    expect(newSubnet).not.toBe(oldSubnet);
    const port = after.ports.find((x) => x.name === 'p')!;
    expect(port.fixed_ips.map((ip) => ip.subnet_id)).toEqual([newSubnet]);
    const iface = after.ports.filter((x) => x.device_id === after.routerId);
    expect(iface.map((x) => x.fixed_ips.map((ip) => [ip.subnet_id, ip.ip_address]))).toEqual([[[newSubnet, '10.97.0.1']]]);
    // Nothing left behind: every port of the network sits on the new subnet only; no port without an address.
    expect(after.ports.length).toBeGreaterThan(0);
    for (const x of after.ports) expect(x.fixed_ips.map((ip) => ip.subnet_id), `${x.device_owner} ${x.id}`).toEqual([newSubnet]);
    expect(after.ports.filter((x) => x.device_owner !== 'network:dhcp').map((x) => x.id).sort()).toEqual([port.id, iface[0]!.id].sort());
    expect(before.ports.find((x) => x.name === 'p')!.id).toBe(port.id);

    expect((await plan()).changes).toEqual([]);
  }, 300_000);
});
