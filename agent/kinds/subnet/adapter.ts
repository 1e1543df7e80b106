import type { Marker } from '../../ownership/marker.ts';
import type { SubnetSpec } from '../../model/kinds.generated.ts';
import { openstackName, type KindAdapter, type Remote } from '../kit/adapter.ts';
import { scopeOfUses } from '../kit/neutron-scope.ts';
import { addressStatus, attachAvailability, ipAvailability } from './availability.ts';
import {
  canonicalIp,
  canonicalPrefix,
  canonicalRoutes,
  canonicalSort,
  describedUpdate,
  findNeutron,
  getNeutron,
  neutronDescription,
  observeNeutron,
  observeNeutronCloud,
  observeNeutronSome,
  putTags,
  sortedTags,
  remarkNeutron,
} from '../kit/neutron.ts';
import { neutronOwnership } from '../kit/ownership.ts';

type Pool = { start: string; end: string };
type Route = { destination: string; nexthop: string };

const pools = (list: readonly Pool[]): Pool[] => canonicalSort(list.map((p) => ({ start: canonicalIp(p.start), end: canonicalIp(p.end) })));

const toRemote = (raw: Record<string, unknown>, description: string): Remote => ({
  id: String(raw.id),
  name: String(raw.name),
  raw,
  fields: {
    name: raw.name,
    description,
    network_id: raw.network_id,
    ip_version: raw.ip_version,
    cidr: canonicalPrefix(String(raw.cidr), true),
    gateway_ip: typeof raw.gateway_ip === 'string' ? canonicalIp(raw.gateway_ip) : null,
    allocation_pools: pools((raw.allocation_pools ?? []) as Pool[]),
    enable_dhcp: raw.enable_dhcp,
    // DHCP hands the servers out in this order: it matters.
    dns_nameservers: ((raw.dns_nameservers ?? []) as string[]).map(canonicalIp),
    host_routes: canonicalRoutes((raw.host_routes ?? []) as Route[]),
    ipv6_address_mode: raw.ipv6_address_mode ?? null,
    ipv6_ra_mode: raw.ipv6_ra_mode ?? null,
    tags: sortedTags(raw),
  },
});

function createBody(desired: Record<string, unknown>, marker: Marker): Record<string, unknown> {
  const { tags: _tags, ...body } = desired;
  // Neutron requires ip_version; the schema's default is 4 and validation ties it to the CIDR.
  const ipVersion = desired.ip_version ?? (String(desired.cidr).includes(':') ? 6 : 4);
  return { ...body, ip_version: ipVersion, description: neutronDescription(desired, marker) };
}

export const subnet: KindAdapter = {
  kind: 'Subnet',
  ownership: neutronOwnership('a subnet', "another project's on a shared or external network"),
  service: 'network',
  fields: {
    name: 'update',
    description: 'update',
    network_id: 'replace',
    ip_version: 'replace',
    cidr: 'replace',
    gateway_ip: 'update',
    allocation_pools: 'update',
    enable_dhcp: 'update',
    dns_nameservers: 'update',
    host_routes: 'update',
    ipv6_address_mode: 'replace',
    ipv6_ra_mode: 'replace',
    tags: 'update',
  },

  remark: remarkNeutron('subnets', 'subnet'),

  async observe(ctx) {
    const [found, availability] = await Promise.all([observeNeutron(ctx, 'subnets', toRemote), ipAvailability(ctx.cloud, ctx.projectId, ctx.signal)]);
    attachAvailability(found, availability);
    return found;
  },

  async observeSome(ctx, wanted) {
    const [found, availability] = await Promise.all([
      observeNeutronSome(ctx, 'subnets', wanted, toRemote),
      ipAvailability(ctx.cloud, ctx.projectId, ctx.signal),
    ]);
    attachAvailability(found, availability);
    return found;
  },

  // Cloud-wide without the IP availability: see ipAvailability.
  observeCloud: (ctx) => observeNeutronCloud(ctx, 'subnets', toRemote),

  report: (remote) => {
    const pools = Array.isArray(remote.raw.allocation_pools)
      ? (remote.raw.allocation_pools as { start: string; end: string }[]).map((p) => ({ start: p.start, end: p.end }))
      : [];
    return { ...(typeof remote.raw.gateway_ip === 'string' ? { gatewayIP: remote.raw.gateway_ip } : {}), allocationPools: pools, ...addressStatus(remote.raw) };
  },

  desired(m, ctx) {
    const spec = m.spec as SubnetSpec;
    const out: Record<string, unknown> = { name: openstackName(m) };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.networkRef) out.network_id = ctx.idOf('Network', spec.networkRef.name);
    if (spec.ipVersion !== undefined) out.ip_version = spec.ipVersion;
    // Neutron clears host bits itself (10.0.0.5/24 becomes 10.0.0.0/24).
    if (spec.cidr !== undefined) out.cidr = canonicalPrefix(spec.cidr, true);
    if (spec.disableGateway === true) out.gateway_ip = null;
    else if (spec.gatewayIP !== undefined) out.gateway_ip = canonicalIp(spec.gatewayIP);
    if (spec.allocationPools) out.allocation_pools = pools(spec.allocationPools);
    if (spec.enableDHCP !== undefined) out.enable_dhcp = spec.enableDHCP;
    if (spec.dnsNameservers) out.dns_nameservers = spec.dnsNameservers.map(canonicalIp);
    if (spec.hostRoutes) out.host_routes = canonicalRoutes(spec.hostRoutes.map((r) => ({ destination: r.destination, nexthop: r.nextHop })));
    if (spec.ipv6AddressMode !== undefined) out.ipv6_address_mode = spec.ipv6AddressMode;
    if (spec.ipv6RAMode !== undefined) out.ipv6_ra_mode = spec.ipv6RAMode;
    if (spec.tags) out.tags = [...spec.tags].sort();
    return out;
  },

  // Only a subnet on the same network can overlap: the one a killed run created for this very manifest is the usual cause.
  refusedByTwin: (err) => err.status === 400 && /overlaps with another subnet/i.test(err.detail),

  bulkCreate: {
    collection: 'subnets',
    body: (_ctx, _m, desired, marker) => createBody(desired, marker),
    remote: (raw, desired, marker) => ({ ...toRemote(raw, typeof desired.description === 'string' ? desired.description : ''), marker }),
    // Neutron's ownership check: a subnet only on the project's network or one shared with it.
    scope: (ctx, m) => {
      const network = (m.spec as SubnetSpec).networkRef?.name;
      return network === undefined ? 'project' : scopeOfUses(ctx, m, [{ kind: 'Network', name: network, path: ['spec', 'networkRef'] }]);
    },
  },

  async create(ctx, _m, desired, marker) {
    const res = await ctx.apis.network.post<{ subnet: Record<string, unknown> }>('/subnets', { subnet: createBody(desired, marker) });
    return { ...toRemote(res.subnet, typeof desired.description === 'string' ? desired.description : ''), marker };
  },

  async update(ctx, remote, changes) {
    const { tags, ...rest } = changes;
    if (Object.keys(rest).length > 0) await ctx.apis.network.put(`/subnets/${remote.id}`, { subnet: describedUpdate(remote, rest) });
    if ('tags' in changes) await putTags(ctx, 'subnets', remote.id, tags);
  },

  async delete(ctx, remote) {
    await ctx.apis.network.remove(`/subnets/${remote.id}`);
  },

  get: (ctx, id) => getNeutron(ctx, 'subnets', 'subnet', id, toRemote),
  // Neutron has no "shared" on a subnet: a subnet on a shared network is usable by every project.
  sharedThrough: (raw) => {
    const networkId = (raw as { network_id?: unknown } | undefined)?.network_id;
    return typeof networkId === 'string' ? { kind: 'Network', id: networkId } : undefined;
  },

  find: (ctx, filter) => findNeutron(ctx, 'subnets', filter, toRemote),
};
