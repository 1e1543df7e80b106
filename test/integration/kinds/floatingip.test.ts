import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { floatingIp } from '../../../agent/kinds/floatingip/adapter.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { drift } from '../../support/drift.ts';

let t: TestProject;
const ids: Record<string, string> = {};
beforeAll(async () => {
  t = await testProject('floatingip');
  const n = t.ctx.apis.network;
  ids.public = (await n.get<{ networks: { id: string }[] }>('/networks', { name: 'public', 'router:external': true })).networks[0]!.id;
  ids.net = (await n.post<{ network: { id: string } }>('/networks', { network: { name: 'app-net' } })).network.id;
  ids.sub = (await n.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'a', network_id: ids.net, cidr: '10.50.0.0/24', ip_version: 4 } })).subnet.id;
  // Association needs a router between the subnet and the external network.
  ids.router = (await n.post<{ router: { id: string } }>('/routers', { router: { name: 'edge', external_gateway_info: { network_id: ids.public } } })).router.id;
  await n.put(`/routers/${ids.router}/add_router_interface`, { subnet_id: ids.sub });
  const newPort = async (body: Record<string, unknown>): Promise<string> => (await n.post<{ port: { id: string } }>('/ports', { port: { network_id: ids.net, ...body } })).port.id;
  ids.port = await newPort({ name: 'app-port', fixed_ips: [{ subnet_id: ids.sub, ip_address: '10.50.0.10' }] });
  ids.other = await newPort({ name: 'other-port', fixed_ips: [{ subnet_id: ids.sub, ip_address: '10.50.0.20' }, { subnet_id: ids.sub, ip_address: '10.50.0.21' }] });
  // A VM's ports without Nova: the lookup only goes by device_id.
  ids.vm = randomUUID();
  ids.vmPort1 = await newPort({ name: 'vm-eth0', device_id: ids.vm, fixed_ips: [{ subnet_id: ids.sub, ip_address: '10.50.0.30' }] });
  await new Promise((resolve) => setTimeout(resolve, 1100)); // created_at counts seconds: make eth0 the older
  ids.vmPort2 = await newPort({ name: 'vm-eth1', device_id: ids.vm, fixed_ips: [{ subnet_id: ids.sub, ip_address: '10.50.0.31' }] });
  t.ids.set('Port/app-port', ids.port);
  t.ids.set('Port/other-port', ids.other);
  t.ids.set('VirtualMachine/vm', ids.vm);
  t.ids.set('VirtualMachine/unbuilt', randomUUID());
});
afterAll(async () => {
  const n = t.ctx.apis.network;
  for (const f of await n.list<{ id: string }>('/floatingips', 'floatingips', { project_id: t.ctx.projectId })) await n.remove(`/floatingips/${f.id}`);
  for (const p of [ids.port, ids.other, ids.vmPort1, ids.vmPort2]) if (p) await n.remove(`/ports/${p}`);
  if (ids.router) {
    await n.put(`/routers/${ids.router}/remove_router_interface`, { subnet_id: ids.sub });
    await n.remove(`/routers/${ids.router}`);
  }
  if (ids.sub) await n.remove(`/subnets/${ids.sub}`);
  if (ids.net) await n.remove(`/networks/${ids.net}`);
  await t.dispose();
});


interface RawFip {
  project_id: string;
  description: string;
  floating_network_id: string;
  floating_ip_address: string;
  port_id: string | null;
  fixed_ip_address: string | null;
}

const publicNet = { network: { filter: { name: 'public' } } };

describe('the FloatingIP adapter', () => {
  it('reserves a marked address, associates it as the follow-up update, moves and releases it, and deletes idempotently', async () => {
    const { ctx } = t;
    const m = manifest('FloatingIP', 'web-ip', ctx.namespace, { externalNetwork: publicNet, portRef: { name: 'app-port' }, description: 'web entry', tags: ['web'] });
    const desired = await floatingIp.desired(m, ctx);
    expect(desired).toEqual({ floating_network_id: ids.public, port_id: ids.port, description: 'web entry', tags: ['web'] });

    // An unmarked address in the same project with the same description: never ours.
    const foreign = await ctx.apis.network.post<{ floatingip: { id: string } }>('/floatingips', { floatingip: { floating_network_id: ids.public, description: 'web entry' } });
    const marker = { owner: ctx.owner, ref: 'FloatingIP/web-ip', specHash: specHash({ floating_network_id: ids.public }) };
    const created = await floatingIp.create(ctx, m, desired, marker);
    try {
      const raw = (await ctx.apis.network.get<{ floatingip: RawFip }>(`/floatingips/${created.id}`)).floatingip;
      expect(raw).toMatchObject({ project_id: ctx.projectId, floating_network_id: ids.public, port_id: null });
      expect(raw.description).toBe(`web entry [kupenstack ${ctx.owner} FloatingIP/web-ip ${marker.specHash}]`);

      let observed = await floatingIp.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);
      expect(observed[0]!.name).toBe(raw.floating_ip_address);
      const followUp = drift(floatingIp, desired, observed[0]!);
      expect(followUp).toEqual({ port_id: ids.port, tags: ['web'] });
      await floatingIp.update(ctx, observed[0]!, followUp, m);
      observed = await floatingIp.observe(ctx);
      // The no-drift property, for every field desired returns.
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(drift(floatingIp, await floatingIp.desired(m, ctx), observed[0]!)).toEqual({});
      expect((await ctx.apis.network.get<{ floatingip: RawFip }>(`/floatingips/${created.id}`)).floatingip).toMatchObject({ port_id: ids.port, fixed_ip_address: '10.50.0.10' });

      // Moved to one given address of a port that has two.
      const m2 = manifest('FloatingIP', 'web-ip', ctx.namespace, { externalNetwork: publicNet, portRef: { name: 'other-port' }, fixedIPAddress: '10.50.0.21', description: 'web', tags: ['web'] });
      const desired2 = await floatingIp.desired(m2, ctx);
      const changes = drift(floatingIp, desired2, observed[0]!);
      expect(Object.keys(changes).sort()).toEqual(['description', 'fixed_ip_address', 'port_id']);
      await floatingIp.update(ctx, observed[0]!, changes, m2);
      observed = await floatingIp.observe(ctx);
      expect(drift(floatingIp, desired2, observed[0]!)).toEqual({});
      expect(observed[0]!.marker).toEqual(marker);

      // Neither portRef nor vmRef: only reserved, so it is released from the port.
      const m3 = manifest('FloatingIP', 'web-ip', ctx.namespace, { externalNetwork: publicNet, description: 'web', tags: ['web'] });
      const desired3 = await floatingIp.desired(m3, ctx);
      expect(drift(floatingIp, desired3, observed[0]!)).toEqual({ port_id: null });
      await floatingIp.update(ctx, observed[0]!, { port_id: null }, m3);
      observed = await floatingIp.observe(ctx);
      expect(observed[0]!.fields).toMatchObject({ port_id: null, fixed_ip_address: null });
      expect(drift(floatingIp, desired3, observed[0]!)).toEqual({});

      // Drift made outside Git shows up.
      await ctx.apis.network.put(`/floatingips/${created.id}`, { floatingip: { port_id: ids.port } });
      observed = await floatingIp.observe(ctx);
      expect(drift(floatingIp, desired3, observed[0]!)).toEqual({ port_id: null });

      // A pinned address cannot change in place: pin one the reserved address is not (Neutron picked it at random from the pool).
      const pinned = raw.floating_ip_address === '203.0.113.250' ? '203.0.113.249' : '203.0.113.250';
      const m4 = manifest('FloatingIP', 'web-ip', ctx.namespace, { ...m3.spec, floatingIPAddress: pinned });
      const changed = drift(floatingIp, await floatingIp.desired(m4, ctx), observed[0]!);
      expect(Object.keys(changed).map((k) => `${k}:${floatingIp.fields[k]}`).sort()).toEqual(['floating_ip_address:replace', 'port_id:update']);

      expect((await floatingIp.get!(ctx, created.id))?.marker).toEqual(marker);
      expect((await floatingIp.find!(ctx, { name: raw.floating_ip_address })).map((r) => r.id)).toEqual([created.id]);
    } finally {
      await floatingIp.delete(ctx, created);
      await floatingIp.delete(ctx, created);
      await ctx.apis.network.remove(`/floatingips/${foreign.floatingip.id}`);
    }
    expect(await floatingIp.observe(ctx)).toEqual([]);
    expect(await floatingIp.get!(ctx, created.id)).toBeUndefined();
  });

  it("associates with a VM's port: its first, or the one holding fixedIPAddress", async () => {
    const { ctx } = t;
    const first = await floatingIp.desired(manifest('FloatingIP', 'vm-ip', ctx.namespace, { externalNetwork: publicNet, vmRef: { name: 'vm' } }), ctx);
    expect(first).toEqual({ floating_network_id: ids.public, port_id: ids.vmPort1 });
    const second = await floatingIp.desired(manifest('FloatingIP', 'vm-ip', ctx.namespace, { externalNetwork: publicNet, vmRef: { name: 'vm' }, fixedIPAddress: '10.50.0.31' }), ctx);
    expect(second).toEqual({ floating_network_id: ids.public, port_id: ids.vmPort2, fixed_ip_address: '10.50.0.31' });
    await expect(floatingIp.desired(manifest('FloatingIP', 'vm-ip', ctx.namespace, { externalNetwork: publicNet, vmRef: { name: 'unbuilt' } }), ctx)).rejects.toMatchObject({ code: 'floatingip.vm-port' });

    const created = await floatingIp.create(ctx, manifest('FloatingIP', 'vm-ip', ctx.namespace, {}), second, { owner: ctx.owner, ref: 'FloatingIP/vm-ip', specHash: specHash({ floating_network_id: ids.public }) });
    try {
      const m = manifest('FloatingIP', 'vm-ip', ctx.namespace, { externalNetwork: publicNet, vmRef: { name: 'vm' }, fixedIPAddress: '10.50.0.31' });
      await floatingIp.update(ctx, created, drift(floatingIp, second, created), m);
      const observed = await floatingIp.observe(ctx);
      expect(drift(floatingIp, second, observed[0]!)).toEqual({});
    } finally {
      await floatingIp.delete(ctx, created);
    }
  });
});
