import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath } from '../../agent/act/apply.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { ApiCounters } from '../../agent/openstack/counters.ts';
import { parseDescriptionMarker } from '../../agent/ownership/marker.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

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
