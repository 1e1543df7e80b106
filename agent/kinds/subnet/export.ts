import ipaddr from 'ipaddr.js';
import type { KindExport } from '../kit/export.ts';
import { projectItems, tagsOf, text } from '../kit/export.ts';

type Pool = { start: string; end: string };
type Route = { destination: string; nexthop: string };

/** Neutron's own pool for a subnet: every address but the network's, the broadcast (IPv4) and the gateway. */
function defaultPools(cidr: string, gateway: string | null): Pool[] | undefined {
  if (!ipaddr.isValidCIDR(cidr)) return undefined;
  const [addr, len] = ipaddr.parseCIDR(cidr);
  if (addr.kind() !== 'ipv4') return undefined;
  const base = ipaddr.IPv4.networkAddressFromCIDR(cidr)
    .toByteArray()
    .reduce((n, b) => n * 256 + b, 0);
  const size = 2 ** (32 - len);
  const ip = (n: number): string => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
  const first = base + 1;
  const last = base + size - 2;
  if (gateway === null) return [{ start: ip(first), end: ip(last) }];
  const g = ipaddr.IPv4.parse(gateway)
    .toByteArray()
    .reduce((n, b) => n * 256 + b, 0);
  if (g === first) return [{ start: ip(first + 1), end: ip(last) }];
  if (g === last) return [{ start: ip(first), end: ip(last - 1) }];
  return [
    { start: ip(first), end: ip(g - 1) },
    { start: ip(g + 1), end: ip(last) },
  ];
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** A subnet: its network by reference, its range, and what differs from Neutron's defaults. */
export const subnetExport: KindExport = {
  kind: 'Subnet',
  list: (s) => projectItems(s, 'Subnet', 'project_id', (project) => s.network.list('/subnets', 'subnets', { project_id: project })),
  spec(raw, s) {
    const cidr = String(raw.cidr);
    const spec: Record<string, unknown> = { networkRef: { name: s.ref('Network', String(raw.network_id)) }, cidr };
    const description = text(raw.description);
    if (description) spec.description = description;
    if (raw.ip_version === 6) spec.ipVersion = 6;
    const gateway = typeof raw.gateway_ip === 'string' ? raw.gateway_ip : null;
    const pools = Array.isArray(raw.allocation_pools) ? (raw.allocation_pools as Pool[]) : [];
    if (gateway === null) spec.disableGateway = true;
    else if (raw.ip_version === 6 || defaultPools(cidr, null)?.[0]?.start !== gateway) spec.gatewayIP = gateway;
    const usual = defaultPools(cidr, gateway);
    if (
      !usual ||
      !same(
        pools.map((p) => ({ start: p.start, end: p.end })),
        usual,
      )
    )
      spec.allocationPools = pools.map((p) => ({ start: p.start, end: p.end }));
    if (raw.enable_dhcp === false) spec.enableDHCP = false;
    if (Array.isArray(raw.dns_nameservers) && raw.dns_nameservers.length > 0) spec.dnsNameservers = raw.dns_nameservers;
    if (Array.isArray(raw.host_routes) && raw.host_routes.length > 0)
      spec.hostRoutes = (raw.host_routes as Route[]).map((r) => ({ destination: r.destination, nextHop: r.nexthop }));
    if (typeof raw.ipv6_address_mode === 'string') spec.ipv6AddressMode = raw.ipv6_address_mode;
    if (typeof raw.ipv6_ra_mode === 'string') spec.ipv6RAMode = raw.ipv6_ra_mode;
    const tags = tagsOf(raw);
    if (tags) spec.tags = tags;
    return spec;
  },
};
