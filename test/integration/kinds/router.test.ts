import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { port } from '../../../agent/kinds/port/adapter.ts';
import { router } from '../../../agent/kinds/router/adapter.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { drift } from '../../support/drift.ts';

let t: TestProject;
const ids: Record<string, string> = {};
beforeAll(async () => {
  t = await testProject('router');
  const n = t.ctx.apis.network;
  ids.public = (await n.get<{ networks: { id: string }[] }>('/networks', { name: 'public', 'router:external': true })).networks[0]!.id;
  ids.net = (await n.post<{ network: { id: string } }>('/networks', { network: { name: 'app-net' } })).network.id;
  ids.subA = (await n.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'a', network_id: ids.net, cidr: '10.40.0.0/24', ip_version: 4 } })).subnet.id;
  ids.subB = (await n.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'b', network_id: ids.net, cidr: '10.41.0.0/24', ip_version: 4 } })).subnet.id;
  t.ids.set('Network/app-net', ids.net);
  t.ids.set('Subnet/a', ids.subA);
  t.ids.set('Subnet/b', ids.subB);
});
afterAll(async () => {
  const n = t.ctx.apis.network;
  for (const p of await n.list<{ id: string; device_owner: string }>('/ports', 'ports', { project_id: t.ctx.projectId })) if (!p.device_owner.startsWith('network:')) await n.remove(`/ports/${p.id}`);
  for (const s of [ids.subA, ids.subB]) if (s) await n.remove(`/subnets/${s}`);
  if (ids.net) await n.remove(`/networks/${ids.net}`);
  await t.dispose();
});


interface RawRouter {
  project_id: string;
  description: string;
  admin_state_up: boolean;
  external_gateway_info: { network_id: string } | null;
  routes: { destination: string; nexthop: string }[];
}

const routerPorts = async (id: string): Promise<{ id: string; fixed_ips: { subnet_id: string }[] }[]> => t.ctx.apis.network.list('/ports', 'ports', { device_id: id });

describe('the Router adapter', () => {
  it('resolves external networks by filter, and says clearly when a filter matches nothing', async () => {
    const { ctx } = t;
    const m = manifest('Router', 'edge', ctx.namespace, { externalGateway: { network: { filter: { name: 'public' } }, enableSNAT: true, externalFixedIPs: [{ subnet: { id: 'ext-subnet-id' }, ipAddress: '203.0.113.9' }] } });
    expect(await router.desired(m, ctx)).toEqual({ name: 'edge', external_network_id: ids.public, enable_snat: true, external_fixed_ip_subnets: ['ext-subnet-id'], external_fixed_ip_addresses: ['203.0.113.9'] });
    const missing = manifest('Router', 'edge', ctx.namespace, { externalGateway: { network: { filter: { name: 'no-such-net' } } } });
    await expect(router.desired(missing, ctx)).rejects.toMatchObject({ code: 'lookup.not-found' });
    // A project member does not see the external network's subnets: a filter on them finds nothing.
    const hidden = manifest('Router', 'edge', ctx.namespace, { externalGateway: { network: { id: ids.public }, externalFixedIPs: [{ subnet: { filter: { name: 'public-subnet' } } }] } });
    await expect(router.desired(hidden, ctx)).rejects.toMatchObject({ code: 'lookup.not-found' });
  });

  it('creates a marked router with its gateway, attaches interfaces and routes as the follow-up update, and deletes idempotently', async () => {
    const { ctx } = t;
    // A Port manifest's port, attached by portRef: it takes subnet b's gateway address.
    const pm = manifest('Port', 'b-gw', ctx.namespace, { networkRef: { name: 'app-net' }, fixedIPs: [{ subnetRef: { name: 'b' }, ipAddress: '10.41.0.1' }] });
    const pd = await port.desired(pm, ctx);
    const gwPort = await port.create(ctx, pm, pd, { owner: ctx.owner, ref: 'Port/b-gw', specHash: specHash({ network_id: pd.network_id }) });
    t.ids.set('Port/b-gw', gwPort.id);

    const m = manifest('Router', 'edge', ctx.namespace, {
      description: 'edge router',
      adminStateUp: true,
      externalGateway: { network: { filter: { name: 'public' } } },
      interfaces: [{ subnetRef: { name: 'a' } }, { portRef: { name: 'b-gw' } }],
      routes: [{ destination: '192.168.7.0/24', nextHop: '10.40.0.50' }],
      tags: ['edge'],
    });
    const desired = await router.desired(m, ctx);
    expect(desired).toEqual({
      name: 'edge',
      description: 'edge router',
      admin_state_up: true,
      external_network_id: ids.public,
      interfaces: [`port:${gwPort.id}`, `subnet:${ids.subA}`].sort(),
      routes: [{ destination: '192.168.7.0/24', nexthop: '10.40.0.50' }],
      tags: ['edge'],
    });

    const foreign = await ctx.apis.network.post<{ router: { id: string } }>('/routers', { router: { name: 'edge' } });
    const marker = { owner: ctx.owner, ref: 'Router/edge', specHash: specHash({}) };
    const created = await router.create(ctx, m, desired, marker);
    try {
      const raw = (await ctx.apis.network.get<{ router: RawRouter }>(`/routers/${created.id}`)).router;
      expect(raw.project_id).toBe(ctx.projectId);
      expect(raw.description).toBe(`edge router [kupenstack ${ctx.owner} Router/edge ${marker.specHash}]`);
      expect(raw.external_gateway_info?.network_id).toBe(ids.public);

      let observed = await router.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);
      const followUp = drift(router, desired, observed[0]!);
      expect(Object.keys(followUp).sort()).toEqual(['interfaces', 'routes', 'tags']);
      await router.update(ctx, observed[0]!, followUp, m);

      observed = await router.observe(ctx);
      // The no-drift property, for every field desired returns.
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(drift(router, await router.desired(m, ctx), observed[0]!)).toEqual({});
      const attached = await routerPorts(created.id);
      expect(attached.map((p) => p.id)).toContain(gwPort.id);
      expect(attached.flatMap((p) => p.fixed_ips.map((f) => f.subnet_id))).toEqual(expect.arrayContaining([ids.subA, ids.subB]));
      // The attached port still belongs to its Port manifest.
      expect((await port.observe(ctx)).map((r) => r.id)).toEqual([gwPort.id]);

      // In place: drop subnet a and the route through it (the route goes first, or Neutron refuses).
      const m2 = manifest('Router', 'edge', ctx.namespace, { ...m.spec, interfaces: [{ portRef: { name: 'b-gw' } }], routes: [], adminStateUp: false, description: 'edge' });
      const desired2 = await router.desired(m2, ctx);
      const changes = drift(router, desired2, observed[0]!);
      expect(Object.keys(changes).sort()).toEqual(['admin_state_up', 'description', 'interfaces', 'routes']);
      await router.update(ctx, observed[0]!, changes, m2);
      observed = await router.observe(ctx);
      expect(drift(router, desired2, observed[0]!)).toEqual({});
      const raw2 = (await ctx.apis.network.get<{ router: RawRouter }>(`/routers/${created.id}`)).router;
      expect(raw2).toMatchObject({ admin_state_up: false, routes: [] });
      expect(observed[0]!.marker).toEqual(marker);

      // Drift made outside Git shows up.
      await ctx.apis.network.put(`/routers/${created.id}/add_router_interface`, { subnet_id: ids.subA });
      await ctx.apis.network.put(`/routers/${created.id}`, { router: { routes: [{ destination: '192.168.8.0/24', nexthop: '10.40.0.60' }] } });
      observed = await router.observe(ctx);
      expect(drift(router, desired2, observed[0]!)).toEqual({ interfaces: [`port:${gwPort.id}`], routes: [] });
      expect((await router.get!(ctx, created.id))?.fields.interfaces).toEqual([`port:${gwPort.id}`, `subnet:${ids.subA}`].sort());
      expect((await router.find!(ctx, { name: 'edge' })).map((r) => r.id).sort()).toEqual([created.id, foreign.router.id].sort());
    } finally {
      // With a route and two interfaces still on it: delete clears them first.
      await router.delete(ctx, created);
      await router.delete(ctx, created);
      await ctx.apis.network.remove(`/routers/${foreign.router.id}`);
    }
    expect(await router.observe(ctx)).toEqual([]);
    expect(await router.get!(ctx, created.id)).toBeUndefined();
    // Neutron deletes a port when it is detached from a router: the Port manifest's port is gone with it.
    expect(await port.get!(ctx, gwPort.id)).toBeUndefined();
  });
});
