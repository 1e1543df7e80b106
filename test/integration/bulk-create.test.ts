import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import type { EngineEvent } from '../../agent/events/events.ts';
import { ApiCounters } from '../../agent/openstack/counters.ts';
import { parseDescriptionMarker, withDescriptionMarker } from '../../agent/ownership/marker.ts';
import { subnet } from '../../agent/kinds/subnet/adapter.ts';
import { replaceHash } from '../../agent/plan/diff.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';
import { OpenStackFaultProxy } from '../testbed/faults/openstack-proxy.ts';

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

/** A clouds.yaml entry of the test cloud whose Keystone (and so its whole catalog) goes through `proxy`. */
function throughProxy(proxy: OpenStackFaultProxy, tag: string): { faultCloud: string; cloudsFile: string } {
  const faultCloud = `kupenstack-bulk-${tag}-faults`;
  const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
  const entry = real.clouds[testCloudName]!;
  const cloudsFile = join(ws.dir, `clouds-bulk-${tag}.yaml`);
  writeFileSync(cloudsFile, stringify({ clouds: { [faultCloud]: { ...entry, auth: { ...entry.auth, auth_url: proxy.authUrl } } } }), { mode: 0o600 });
  return { faultCloud, cloudsFile };
}

describe('Neutron bulk create', () => {
  it('creates networks and subnets of one project in list POSTs, each object with its own marker, exactly once', async () => {
    const docs: string[] = [];
    for (let i = 0; i < 6; i++) {
      docs.push(`${head('Network', `bulk-net-${i}`, 'bulk')}  mtu: 1400\n`);
      docs.push(`${head('Subnet', `bulk-sub-${i}`, 'bulk')}  networkRef: {name: bulk-net-${i}}\n  cidr: 10.${40 + i}.0.0/24\n  enableDHCP: false\n`);
    }
    ws.write({ 'bulk.yaml': docs.join('---\n') });
    const counters = new ApiCounters();
    const out = await applyPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, counters, log: (l) => ws.log.push(l) });
    expect(out.report).toMatchObject({ created: 12, errors: [] });
    const posts = counters.byCollection();
    // Fewer POSTs than objects: the creates of one kind went out as lists.
    expect(posts['network POST /networks']).toBeLessThan(6);
    expect(posts['network POST /subnets']).toBeLessThan(6);
    // A first apply of a namespace makes its project: no list of the agent's role assignments (a new project has none).
    expect(posts['identity POST /projects']).toBe(1);
    expect(posts['identity GET /role_assignments']).toBeUndefined();
    // The role's id comes with the agent's own token (admin implies member): no lookup of it either.
    expect(posts['identity GET /roles']).toBeUndefined();

    // Neutron: each network exactly once, each carrying the marker of its own manifest.
    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'bulk')!;
    const nets = await ws.cloud.client('network').list<{ name: string; description: string }>('/networks', 'networks', { project_id: project.id });
    expect(nets.map((n) => n.name).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `bulk-net-${i}`));
    expect(nets.map((n) => `${n.name}=${parseDescriptionMarker(n.description).marker?.ref ?? ''}`).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `bulk-net-${i}=Network/bulk-net-${i}`));
    const subnets = await ws.cloud.client('network').list<{ name: string }>('/subnets', 'subnets', { project_id: project.id });
    expect(subnets.map((n) => n.name).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `bulk-sub-${i}`));

    // The next run adopts them all: nothing is created again.
    expect((await ws.apply()).report).toMatchObject({ created: 0, unchanged: 12, errors: [] });
  });
});

interface RawRule {
  id: string;
  description: string | null;
  port_range_min: number | null;
  direction: string;
}

/** A group with `n` ingress rules (ports 8000…) whose rules name it, in namespace `ns`. */
const groupDoc = (name: string, ns: string, n: number): string =>
  `${head('SecurityGroup', name, ns)}  rules:\n${Array.from({ length: n }, (_, i) => `    - {direction: ingress, protocol: tcp, portRangeMin: ${8000 + i}, portRangeMax: ${8000 + i}, remoteIPPrefix: 10.0.0.0/8, description: rule ${i}}\n`).join('')}`;

async function groupRules(ns: string, name: string): Promise<RawRule[]> {
  const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === ns)!;
  const network = ws.cloud.client('network');
  const [group] = await network.list<{ id: string; security_group_rules: RawRule[] }>('/security-groups', 'security_groups', { project_id: project.id, name });
  expect(group).toBeDefined();
  return group!.security_group_rules;
}

describe('Neutron bulk create of security-group rules', () => {
  it("creates a group's rules in one list POST, each rule with the group's marker, exactly once", async () => {
    ws.write({ 'rules.yaml': groupDoc('bulk-rules', 'bulkrules', 6) });
    const counters = new ApiCounters();
    const out = await applyPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, counters, log: (l) => ws.log.push(l) });
    expect(out.report).toMatchObject({ created: 1, errors: [] });
    // One POST for the six rules (the group's own create is another collection).
    expect(counters.byCollection()['network POST /security-group-rules']).toBe(1);

    const rules = (await groupRules('bulkrules', 'bulk-rules')).filter((r) => r.direction === 'ingress');
    expect(rules.map((r) => r.port_range_min).sort()).toEqual([8000, 8001, 8002, 8003, 8004, 8005]);
    // Each rule says whose it is, after the description the manifest gave it.
    expect(rules.map((r) => `${parseDescriptionMarker(r.description).description}=${parseDescriptionMarker(r.description).marker?.ref ?? ''}`).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `rule ${i}=SecurityGroup/bulk-rules`));

    // The marker is not a difference: the next run finds the group unchanged.
    expect((await ws.apply()).report).toMatchObject({ created: 0, updated: 0, errors: [] });
  });

  it('adopts the rules of a bulk POST whose answer was lost after Neutron made them, and creates none twice', async () => {
    // Only the first POST of rules breaks, after Neutron did the work: the answer is lost.
    const proxy = await new OpenStackFaultProxy({ seed: 1, rate: 1, faults: ['reset-after'], methods: ['POST'], paths: /\/security-group-rules$/, limit: 1, slowMs: 1000 }).start();
    try {
      const { faultCloud, cloudsFile } = throughProxy(proxy, 'rules');
      ws.write({ 'lost.yaml': groupDoc('lost-rules', 'bulklost', 5) });
      const out = await applyPath({ path: ws.repo, cloud: faultCloud, cloudsFile, config: ws.config, prune: false, allowMassDelete: false, log: (l) => ws.log.push(l) });

      // The fault did happen: Neutron made the five rules and the agent never got the answer.
      expect(proxy.lost.map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual(['POST /v2.0/security-group-rules 201']);
      expect(out.report).toMatchObject({ errors: [] });
      const rules = (await groupRules('bulklost', 'lost-rules')).filter((r) => r.direction === 'ingress');
      expect(rules.map((r) => r.port_range_min).sort()).toEqual([8000, 8001, 8002, 8003, 8004]);
      expect(rules.every((r) => parseDescriptionMarker(r.description).marker?.ref === 'SecurityGroup/lost-rules')).toBe(true);
    } finally {
      await proxy.stop();
    }
    expect((await ws.apply()).report).toMatchObject({ created: 0, updated: 0, errors: [] });
  });
});

describe('a create refused because an earlier run of ours made the object meanwhile', () => {
  it("adopts a Subnet that a killed run's late create made after this run observed (Neutron: 'overlaps with another subnet')", async () => {
    ws.write({ 'twin.yaml': `${head('Network', 'twin-net', 'twin')}  mtu: 1400\n` });
    expect((await ws.apply()).report).toMatchObject({ created: 1, errors: [] });
    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'twin')!;
    const network = ws.cloud.client('network');
    const [net] = await network.list<{ id: string }>('/networks', 'networks', { project_id: project.id, name: 'twin-net' });

    // The run's list of subnets is held back: while it is, the "killed run" makes the subnet, marked as ours.
    const proxy = await new OpenStackFaultProxy({ seed: 1, rate: 1, faults: ['slow'], methods: ['GET'], paths: /\/subnets(\?|$)/, limit: 1, slowMs: 4000 }).start();
    let twinId: string;
    try {
      const { faultCloud, cloudsFile } = throughProxy(proxy, 'twin');
      ws.write({ 'twin.yaml': `${head('Network', 'twin-net', 'twin')}  mtu: 1400\n---\n${head('Subnet', 'twin-sub', 'twin')}  networkRef: {name: twin-net}\n  cidr: 10.77.0.0/24\n  enableDHCP: false\n` });
      const events: EngineEvent[] = [];
      const applying = applyPath({ path: ws.repo, cloud: faultCloud, cloudsFile, config: ws.config, prune: false, allowMassDelete: false, log: (l) => ws.log.push(l), events: (e) => events.push(e) });
      for (let i = 0; i < 200 && proxy.lost.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(proxy.lost.map((l) => `${l.method} ${l.fault}`)).toEqual(['GET slow']);
      const desired = { name: 'twin-sub', network_id: net!.id, cidr: '10.77.0.0/24', enable_dhcp: false };
      const marker = { owner: ws.owner, ref: 'Subnet/twin-sub', specHash: replaceHash(subnet, desired) };
      const made = await network.post<{ subnet: { id: string } }>('/subnets', { subnet: { ...desired, ip_version: 4, project_id: project.id, description: withDescriptionMarker(undefined, marker) } });
      twinId = made.subnet.id;
      const out = await applying;
      // Refused by Neutron (the CIDR overlaps the twin), then found by its marker and adopted: no error, no second subnet.
      expect(out.report?.errors).toEqual([]);
      expect(events.filter((e) => e.type === 'adopted').map((e) => `${e.address} ${e.message}`)).toEqual([`twin/Subnet/twin-sub adopted ${twinId}, created by an earlier attempt`]);
    } finally {
      await proxy.stop();
    }
    const subnets = await network.list<{ id: string }>('/subnets', 'subnets', { project_id: project.id });
    expect(subnets.map((x) => x.id)).toEqual([twinId]);
    expect((await ws.apply()).report).toMatchObject({ created: 0, updated: 0, errors: [] });
  });
});
