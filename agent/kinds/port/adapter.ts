import type { Marker } from '../../ownership/marker.ts';
import type { Manifest } from '../../model/manifest.ts';
import type { PortSpec } from '../../model/kinds.generated.ts';
import { openstackName, type AdapterContext, type KindAdapter, type Remote } from '../kit/adapter.ts';
import { scopeOfUses } from '../kit/neutron-scope.ts';
import {
  canonicalIp,
  canonicalPrefix,
  canonicalSort,
  describedUpdate,
  desiredFixedIps,
  findNeutron,
  getNeutron,
  neutronDescription,
  observedFixedIps,
  observeNeutron,
  observeNeutronSome,
  observeNeutronCloud,
  putTags,
  remarkNeutron,
  neutronRemote,
} from '../kit/neutron.ts';
import { neutronOwnership } from '../kit/ownership.ts';

type Pair = { ip_address: string; mac_address?: string };

/** Address pairs as compared: a pair's MAC is left out when it is the port's own (Neutron's default). */
function pairs(list: readonly Pair[], portMac: string | undefined): Pair[] {
  return canonicalSort(
    list.map((p) => {
      const out: Pair = { ip_address: canonicalPrefix(p.ip_address, false) };
      const mac = p.mac_address?.toLowerCase();
      if (mac && mac !== portMac) out.mac_address = mac;
      return out;
    }),
  );
}

const toRemote = (raw: Record<string, unknown>, description: string): Remote => {
  const mac = typeof raw.mac_address === 'string' ? raw.mac_address.toLowerCase() : undefined;
  return neutronRemote(raw, description, {
    network_id: raw.network_id,
    ...observedFixedIps('fixed_ip', raw.fixed_ips),
    // Neutron keeps the MAC's case as given.
    mac_address: mac,
    security_groups: [...((raw.security_groups ?? []) as string[])].sort(),
    port_security_enabled: raw.port_security_enabled,
    admin_state_up: raw.admin_state_up,
    allowed_address_pairs: pairs((raw.allowed_address_pairs ?? []) as Pair[], mac),
    'binding:vnic_type': raw['binding:vnic_type'],
  });
};

/** fixed_ips as Neutron takes them, references resolved. */
function fixedIps(spec: PortSpec, ctx: AdapterContext): { subnet_id?: string; ip_address?: string }[] | undefined {
  return spec.fixedIPs?.map((f) => {
    const ip: { subnet_id?: string; ip_address?: string } = {};
    if (f.subnetRef) ip.subnet_id = ctx.idOf('Subnet', f.subnetRef.name);
    if (f.ipAddress !== undefined) ip.ip_address = canonicalIp(f.ipAddress);
    return ip;
  });
}

/** allowed_address_pairs as Neutron takes them: the MACs as declared. */
function addressPairs(m: Manifest): Pair[] | undefined {
  return (m.spec as PortSpec).allowedAddressPairs?.map((p) =>
    p.macAddress ? { ip_address: p.ipAddress, mac_address: p.macAddress } : { ip_address: p.ipAddress },
  );
}

function createBody(ctx: AdapterContext, m: Manifest, desired: Record<string, unknown>, marker: Marker): Record<string, unknown> {
  const spec = m.spec as PortSpec;
  const body: Record<string, unknown> = {
    name: desired.name,
    description: neutronDescription(desired, marker),
    network_id: desired.network_id,
    admin_state_up: desired.admin_state_up ?? true,
  };
  for (const key of ['mac_address', 'security_groups', 'port_security_enabled', 'binding:vnic_type']) if (desired[key] !== undefined) body[key] = desired[key];
  const ips = fixedIps(spec, ctx);
  if (ips) body.fixed_ips = ips;
  const declaredPairs = addressPairs(m);
  if (declaredPairs) body.allowed_address_pairs = declaredPairs;
  return body;
}

export const port: KindAdapter = {
  impact: { onDelete: { code: 'fixed-ip-changes', message: 'the port and its addresses are released' } },
  kind: 'Port',
  ownership: neutronOwnership('a port'),
  service: 'network',
  fields: {
    name: 'update',
    description: 'update',
    network_id: 'replace',
    fixed_ip_subnets: 'update',
    fixed_ip_addresses: 'update',
    mac_address: 'replace',
    security_groups: 'update',
    port_security_enabled: 'update',
    admin_state_up: 'update',
    allowed_address_pairs: 'update',
    'binding:vnic_type': 'update',
    tags: 'update',
  },

  remark: remarkNeutron('ports', 'port'),

  // Replace cascade: the port gives up its addresses on a subnet about to be replaced; the update after takes new ones.
  async release(ctx, remote, ids) {
    const current = (remote.raw.fixed_ips ?? []) as { subnet_id: string; ip_address: string }[];
    const kept = current.filter((ip) => !ids.includes(ip.subnet_id));
    if (kept.length !== current.length) await ctx.apis.network.put(`/ports/${remote.id}`, { port: { fixed_ips: kept } });
  },

  observe: (ctx) => observeNeutron(ctx, 'ports', toRemote),

  observeSome: (ctx, wanted) => observeNeutronSome(ctx, 'ports', wanted, toRemote),

  observeCloud: (ctx) => observeNeutronCloud(ctx, 'ports', toRemote),

  report: (remote) => ({
    ...(typeof remote.raw.mac_address === 'string' ? { macAddress: remote.raw.mac_address } : {}),
    fixedIPs: Array.isArray(remote.raw.fixed_ips)
      ? (remote.raw.fixed_ips as { subnet_id: string; ip_address: string }[]).map((ip) => ({ subnetID: ip.subnet_id, ipAddress: ip.ip_address }))
      : [],
    ...(typeof remote.raw.device_id === 'string' && remote.raw.device_id ? { deviceID: remote.raw.device_id } : {}),
    ...(typeof remote.raw.device_owner === 'string' && remote.raw.device_owner ? { deviceOwner: remote.raw.device_owner } : {}),
  }),

  desired(m, ctx) {
    const spec = m.spec as PortSpec;
    const out: Record<string, unknown> = { name: openstackName(m) };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.networkRef) out.network_id = ctx.idOf('Network', spec.networkRef.name);
    const ips = fixedIps(spec, ctx);
    if (ips) Object.assign(out, desiredFixedIps('fixed_ip', ips));
    const mac = spec.macAddress?.toLowerCase();
    if (mac) out.mac_address = mac;
    if (spec.securityGroupRefs) out.security_groups = spec.securityGroupRefs.map((r) => ctx.idOf('SecurityGroup', r.name)).sort();
    if (spec.portSecurityEnabled !== undefined) out.port_security_enabled = spec.portSecurityEnabled;
    if (spec.adminStateUp !== undefined) out.admin_state_up = spec.adminStateUp;
    const declaredPairs = addressPairs(m);
    if (declaredPairs) out.allowed_address_pairs = pairs(declaredPairs, mac);
    if (spec.vnicType !== undefined) out['binding:vnic_type'] = spec.vnicType;
    if (spec.tags) out.tags = [...spec.tags].sort();
    return out;
  },

  bulkCreate: {
    collection: 'ports',
    body: createBody,
    remote: (raw, desired, marker) => ({ ...toRemote(raw, typeof desired.description === 'string' ? desired.description : ''), marker }),
    // Neutron's checks: a port only on the project's network or a shared one, only with the project's security groups or shared ones.
    scope: (ctx, m) => {
      const spec = m.spec as PortSpec;
      if (spec.networkRef === undefined) return 'project';
      return scopeOfUses(ctx, m, [
        { kind: 'Network', name: spec.networkRef.name, path: ['spec', 'networkRef'] },
        ...(spec.securityGroupRefs ?? []).map((r, i) => ({ kind: 'SecurityGroup' as const, name: r.name, path: ['spec', 'securityGroupRefs', i] })),
      ]);
    },
  },

  async create(ctx, m, desired, marker) {
    const res = await ctx.apis.network.post<{ port: Record<string, unknown> }>('/ports', { port: createBody(ctx, m, desired, marker) });
    return { ...toRemote(res.port, typeof desired.description === 'string' ? desired.description : ''), marker };
  },

  async update(ctx, remote, changes, m) {
    const { tags, fixed_ip_subnets: _subnets, fixed_ip_addresses: _addresses, allowed_address_pairs: _pairs, ...rest } = changes;
    const body: Record<string, unknown> = { ...rest };
    // The comparable forms lose detail: send the manifest's own lists (Neutron keeps a subnet's current address when the entry gives none).
    if ('fixed_ip_subnets' in changes || 'fixed_ip_addresses' in changes) body.fixed_ips = fixedIps(m.spec, ctx);
    if ('allowed_address_pairs' in changes) body.allowed_address_pairs = addressPairs(m);
    // Neutron refuses to switch port security off while the port still has groups.
    if (body.port_security_enabled === false && !('security_groups' in body)) body.security_groups = [];
    if (Object.keys(body).length > 0) await ctx.apis.network.put(`/ports/${remote.id}`, { port: describedUpdate(remote, body) });
    if ('tags' in changes) await putTags(ctx, 'ports', remote.id, tags);
  },

  async delete(ctx, remote) {
    await ctx.apis.network.remove(`/ports/${remote.id}`);
  },

  get: (ctx, id) => getNeutron(ctx, 'ports', 'port', id, toRemote),

  find: (ctx, filter) => findNeutron(ctx, 'ports', filter, toRemote),
};
