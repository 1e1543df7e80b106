import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KindAdapter } from '../../../agent/kinds/kit/adapter.ts';
import { subnet } from '../../../agent/kinds/subnet/adapter.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { drift } from '../../support/drift.ts';

let t: TestProject;
let networkId: string;
beforeAll(async () => {
  t = await testProject('subnet');
  networkId = (await t.ctx.apis.network.post<{ network: { id: string } }>('/networks', { network: { name: 'app-net' } })).network.id;
  t.ids.set('Network/app-net', networkId);
});
afterAll(async () => {
  await t.ctx.apis.network.remove(`/networks/${networkId}`);
  await t.dispose();
});

/** The fields an engine would find changed: desired keys whose observed value differs. */

function replaceHash(adapter: KindAdapter, desired: Record<string, unknown>): string {
  return specHash(Object.fromEntries(Object.entries(desired).filter(([k]) => adapter.fields[k] === 'replace')));
}

describe('the Subnet adapter', () => {
  it('creates a marked IPv4 subnet, shows no drift for an unchanged manifest, updates in place and deletes idempotently', async () => {
    const { ctx } = t;
    const m = manifest('Subnet', 'app-sub', ctx.namespace, {
      networkRef: { name: 'app-net' },
      cidr: '10.20.0.0/24',
      gatewayIP: '10.20.0.1',
      allocationPools: [
        { start: '10.20.0.100', end: '10.20.0.200' },
        { start: '10.20.0.10', end: '10.20.0.20' },
      ],
      dnsNameservers: ['8.8.8.8', '1.1.1.1'],
      hostRoutes: [{ destination: '192.168.0.0/24', nextHop: '10.20.0.2' }],
      enableDHCP: false,
      description: 'app tier',
      tags: ['b', 'a'],
    });
    const desired = await subnet.desired(m, ctx);
    expect(desired).toEqual({
      name: 'app-sub',
      network_id: networkId,
      cidr: '10.20.0.0/24',
      gateway_ip: '10.20.0.1',
      allocation_pools: [
        { start: '10.20.0.10', end: '10.20.0.20' },
        { start: '10.20.0.100', end: '10.20.0.200' },
      ],
      dns_nameservers: ['8.8.8.8', '1.1.1.1'],
      host_routes: [{ destination: '192.168.0.0/24', nexthop: '10.20.0.2' }],
      enable_dhcp: false,
      description: 'app tier',
      tags: ['a', 'b'],
    });

    // An unmarked look-alike in the same project and network: never ours.
    const foreign = await ctx.apis.network.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'app-sub', network_id: networkId, cidr: '10.21.0.0/24', ip_version: 4 } });
    const marker = { owner: ctx.owner, ref: 'Subnet/app-sub', specHash: replaceHash(subnet, desired) };
    const created = await subnet.create(ctx, m, desired, marker);
    try {
      const raw = await ctx.apis.network.get<{ subnet: Record<string, unknown> }>(`/subnets/${created.id}`);
      expect(raw.subnet).toMatchObject({ project_id: ctx.projectId, network_id: networkId, cidr: '10.20.0.0/24', ip_version: 4, enable_dhcp: false, tags: [] });
      expect(raw.subnet.description).toBe(`app tier [kupenstack ${ctx.owner} Subnet/app-sub ${marker.specHash}]`);

      let observed = await subnet.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);
      // Status: the pools hold 11 + 101 addresses; none is allocated (no DHCP, no port) until a port takes one.
      expect(subnet.report!(observed[0]!)).toMatchObject({ totalIPs: 112, usedIPs: 0 });
      const port = await ctx.apis.network.post<{ port: { id: string } }>('/ports', { port: { network_id: networkId, fixed_ips: [{ subnet_id: created.id, ip_address: '10.20.0.15' }] } });
      try {
        expect(subnet.report!((await subnet.observe(ctx))[0]!)).toMatchObject({ totalIPs: 112, usedIPs: 1 });
      } finally {
        await ctx.apis.network.remove(`/ports/${port.port.id}`);
      }
      // Tags cannot ride in Zed's create call: they are the follow-up update.
      expect(drift(subnet, desired, observed[0]!)).toEqual({ tags: ['a', 'b'] });
      await subnet.update(ctx, observed[0]!, { tags: ['a', 'b'] }, m);
      observed = await subnet.observe(ctx);
      // The no-drift property: an unchanged manifest gives no difference, so a second apply writes nothing.
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(drift(subnet, await subnet.desired(m, ctx), observed[0]!)).toEqual({});

      // A changed manifest: in place.
      const m2 = manifest('Subnet', 'app-sub', ctx.namespace, { ...m.spec, name: 'app-sub-2', description: 'app', dnsNameservers: ['1.1.1.1'], allocationPools: [{ start: '10.20.0.50', end: '10.20.0.60' }], enableDHCP: true });
      const desired2 = await subnet.desired(m2, ctx);
      const changes = drift(subnet, desired2, observed[0]!);
      expect(Object.keys(changes).sort()).toEqual(['allocation_pools', 'description', 'dns_nameservers', 'enable_dhcp', 'name']);
      expect(Object.keys(changes).every((k) => subnet.fields[k] === 'update')).toBe(true);
      await subnet.update(ctx, observed[0]!, changes, m2);
      observed = await subnet.observe(ctx);
      expect(drift(subnet, desired2, observed[0]!)).toEqual({});
      expect(observed[0]!.marker).toEqual(marker);
      expect(observed[0]!.name).toBe('app-sub-2');

      // Drift made outside Git shows up.
      await ctx.apis.network.put(`/subnets/${created.id}`, { subnet: { name: 'renamed', host_routes: [] } });
      observed = await subnet.observe(ctx);
      expect(drift(subnet, desired2, observed[0]!)).toEqual({ name: 'app-sub-2', host_routes: desired2.host_routes });

      // A different CIDR is a replacement.
      const m3 = manifest('Subnet', 'app-sub', ctx.namespace, { ...m2.spec, cidr: '10.22.0.0/24' });
      const changed = Object.keys(drift(subnet, await subnet.desired(m3, ctx), observed[0]!));
      expect(changed.filter((k) => subnet.fields[k] === 'replace')).toEqual(['cidr']);

      expect((await subnet.get!(ctx, created.id))?.marker).toEqual(marker);
      expect((await subnet.find!(ctx, { name: 'renamed' })).map((r) => r.id)).toEqual([created.id]);
    } finally {
      await subnet.delete(ctx, created);
      await subnet.delete(ctx, created);
      await ctx.apis.network.remove(`/subnets/${foreign.subnet.id}`);
    }
    expect(await subnet.observe(ctx)).toEqual([]);
    expect(await subnet.get!(ctx, created.id)).toBeUndefined();
  });

  it('normalises IPv6 addresses and a disabled gateway the way Neutron reports them', async () => {
    const { ctx } = t;
    const m = manifest('Subnet', 'v6-sub', ctx.namespace, {
      networkRef: { name: 'app-net' },
      ipVersion: 6,
      cidr: '2001:DB8:0:1:0::/64',
      disableGateway: true,
      ipv6AddressMode: 'dhcpv6-stateless',
      ipv6RAMode: 'dhcpv6-stateless',
      dnsNameservers: ['2001:4860:4860:0:0:0:0:8888'],
    });
    const desired = await subnet.desired(m, ctx);
    expect(desired).toMatchObject({ cidr: '2001:db8:0:1::/64', gateway_ip: null, dns_nameservers: ['2001:4860:4860::8888'] });
    const created = await subnet.create(ctx, m, desired, { owner: ctx.owner, ref: 'Subnet/v6-sub', specHash: replaceHash(subnet, desired) });
    try {
      const observed = await subnet.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(drift(subnet, desired, observed[0]!)).toEqual({});
    } finally {
      await subnet.delete(ctx, created);
    }
  });
});
