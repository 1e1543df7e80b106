import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { port } from '../../../agent/kinds/port/adapter.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { drift } from '../../support/drift.ts';

let t: TestProject;
const ids: Record<string, string> = {};
beforeAll(async () => {
  t = await testProject('port');
  const n = t.ctx.apis.network;
  ids.net = (await n.post<{ network: { id: string } }>('/networks', { network: { name: 'app-net' } })).network.id;
  ids.subA = (await n.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'a', network_id: ids.net, cidr: '10.30.0.0/24', ip_version: 4 } })).subnet.id;
  ids.subB = (await n.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'b', network_id: ids.net, cidr: '10.31.0.0/24', ip_version: 4 } })).subnet.id;
  ids.sg = (await n.post<{ security_group: { id: string } }>('/security-groups', { security_group: { name: 'app-sg' } })).security_group.id;
  t.ids.set('Network/app-net', ids.net);
  t.ids.set('Subnet/a', ids.subA);
  t.ids.set('Subnet/b', ids.subB);
  t.ids.set('SecurityGroup/app-sg', ids.sg);
});
afterAll(async () => {
  const n = t.ctx.apis.network;
  if (ids.subA) await n.remove(`/subnets/${ids.subA}`);
  if (ids.subB) await n.remove(`/subnets/${ids.subB}`);
  if (ids.net) await n.remove(`/networks/${ids.net}`);
  await t.dispose();
});


interface RawPort {
  project_id: string;
  description: string;
  mac_address: string;
  admin_state_up: boolean;
  security_groups: string[];
  fixed_ips: { subnet_id: string; ip_address: string }[];
  allowed_address_pairs: { ip_address: string; mac_address: string }[];
}

describe('the Port adapter', () => {
  it('creates a marked port with its addresses, shows no drift for an unchanged manifest, updates in place and deletes idempotently', async () => {
    const { ctx } = t;
    const m = manifest('Port', 'app-port', ctx.namespace, {
      description: 'vip holder',
      networkRef: { name: 'app-net' },
      fixedIPs: [{ subnetRef: { name: 'a' }, ipAddress: '10.30.0.10' }, { subnetRef: { name: 'b' } }],
      macAddress: 'FA:16:3E:AA:BB:CC',
      securityGroupRefs: [{ name: 'app-sg' }],
      adminStateUp: false,
      allowedAddressPairs: [{ ipAddress: '10.30.0.96/28' }, { ipAddress: '10.30.0.200', macAddress: 'FA:16:3E:00:00:02' }],
      vnicType: 'normal',
      tags: ['b', 'a'],
    });
    const desired = await port.desired(m, ctx);
    expect(desired).toEqual({
      name: 'app-port',
      description: 'vip holder',
      network_id: ids.net,
      // subnet b's address is Neutron's choice: only the subnets are compared.
      fixed_ip_subnets: [ids.subA, ids.subB].sort(),
      mac_address: 'fa:16:3e:aa:bb:cc',
      security_groups: [ids.sg],
      admin_state_up: false,
      allowed_address_pairs: [{ ip_address: '10.30.0.200', mac_address: 'fa:16:3e:00:00:02' }, { ip_address: '10.30.0.96/28' }],
      'binding:vnic_type': 'normal',
      tags: ['a', 'b'],
    });

    const foreign = await ctx.apis.network.post<{ port: { id: string } }>('/ports', { port: { name: 'app-port', network_id: ids.net } });
    const marker = { owner: ctx.owner, ref: 'Port/app-port', specHash: specHash({ network_id: desired.network_id, mac_address: desired.mac_address }) };
    const created = await port.create(ctx, m, desired, marker);
    try {
      const raw = (await ctx.apis.network.get<{ port: RawPort }>(`/ports/${created.id}`)).port;
      expect(raw.project_id).toBe(ctx.projectId);
      expect(raw.description).toBe(`vip holder [kupenstack ${ctx.owner} Port/app-port ${marker.specHash}]`);
      expect(raw.admin_state_up).toBe(false);
      expect(raw.security_groups).toEqual([ids.sg]);
      expect(raw.fixed_ips.find((f) => f.subnet_id === ids.subA)?.ip_address).toBe('10.30.0.10');
      expect(raw.fixed_ips.filter((f) => f.subnet_id === ids.subB)).toHaveLength(1);

      let observed = await port.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);
      expect(drift(port, desired, observed[0]!)).toEqual({ tags: ['a', 'b'] });
      await port.update(ctx, observed[0]!, { tags: ['a', 'b'] }, m);
      observed = await port.observe(ctx);
      // The no-drift property, for every field desired returns.
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(drift(port, await port.desired(m, ctx), observed[0]!)).toEqual({});

      // In place: state, addresses (b now pinned), address pairs, groups.
      const m2 = manifest('Port', 'app-port', ctx.namespace, {
        ...m.spec,
        adminStateUp: true,
        fixedIPs: [{ subnetRef: { name: 'a' }, ipAddress: '10.30.0.10' }, { subnetRef: { name: 'b' }, ipAddress: '10.31.0.20' }],
        allowedAddressPairs: [{ ipAddress: '10.30.0.96/28' }],
        securityGroupRefs: [],
      });
      const desired2 = await port.desired(m2, ctx);
      expect(desired2.fixed_ip_addresses).toEqual(['10.30.0.10', '10.31.0.20']);
      const changes = drift(port, desired2, observed[0]!);
      expect(Object.keys(changes).sort()).toEqual(['admin_state_up', 'allowed_address_pairs', 'fixed_ip_addresses', 'security_groups']);
      await port.update(ctx, observed[0]!, changes, m2);
      observed = await port.observe(ctx);
      expect(drift(port, desired2, observed[0]!)).toEqual({});
      const raw2 = (await ctx.apis.network.get<{ port: RawPort }>(`/ports/${created.id}`)).port;
      expect(raw2.fixed_ips.map((f) => f.ip_address).sort()).toEqual(['10.30.0.10', '10.31.0.20']);
      expect(raw2.allowed_address_pairs).toEqual([{ ip_address: '10.30.0.96/28', mac_address: 'fa:16:3e:aa:bb:cc' }]);
      expect(observed[0]!.marker).toEqual(marker);

      // Drift made outside Git shows up.
      await ctx.apis.network.put(`/ports/${created.id}`, { port: { name: 'renamed', allowed_address_pairs: [] } });
      observed = await port.observe(ctx);
      expect(drift(port, desired2, observed[0]!)).toEqual({ name: 'app-port', allowed_address_pairs: [{ ip_address: '10.30.0.96/28' }] });

      // A new MAC is a replacement.
      const m3 = manifest('Port', 'app-port', ctx.namespace, { ...m2.spec, name: 'renamed', allowedAddressPairs: [], macAddress: 'fa:16:3e:aa:bb:cd' });
      const changed = drift(port, await port.desired(m3, ctx), observed[0]!);
      expect(Object.keys(changed).map((k) => `${k}:${port.fields[k]}`)).toEqual(['mac_address:replace']);

      expect((await port.get!(ctx, created.id))?.marker).toEqual(marker);
    } finally {
      await port.delete(ctx, created);
      await port.delete(ctx, created);
      await ctx.apis.network.remove(`/ports/${foreign.port.id}`);
    }
    expect(await port.observe(ctx)).toEqual([]);
    expect(await port.get!(ctx, created.id)).toBeUndefined();
  });

  it('observes a minimal port without drift', async () => {
    const { ctx } = t;
    const m = manifest('Port', 'plain', ctx.namespace, { networkRef: { name: 'app-net' } });
    const desired = await port.desired(m, ctx);
    expect(desired).toEqual({ name: 'plain', network_id: ids.net });
    const created = await port.create(ctx, m, desired, { owner: ctx.owner, ref: 'Port/plain', specHash: specHash({ network_id: ids.net }) });
    try {
      const observed = await port.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(drift(port, desired, observed[0]!)).toEqual({});
      expect(observed[0]!.fields.admin_state_up).toBe(true);
    } finally {
      await port.delete(ctx, created);
    }
  });
});
