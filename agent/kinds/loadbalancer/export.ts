import type { ExportScope, KindExport } from '../kit/export.ts';
import { projectItems, text } from '../kit/export.ts';
import { hasOctavia, readTrees } from './octavia.ts';
import { memberName } from './adapter.ts';
import { poolProtocol, type ObservedListener } from './tree.ts';
import { canonicalIp } from '../kit/neutron.ts';

/**
 * Octavia load balancers with their listeners, each listener's default pool,
 * the pool's members and health monitor, as one managed LoadBalancer
 * manifest that adoption takes over whole (the adapter's remark tags every
 * child, then the load balancer). A member whose address is a fixed address
 * of an exported VM on the member's subnet is written by vmRef. What a
 * manifest cannot say (a name that is no DNS label, a listener protocol or
 * monitor type the kind lacks, a pool no listener uses by default, a member
 * without the VIP's subnet) leaves that load balancer an observe-only import,
 * with the reason in the export's list.
 */

/** Each exported load balancer's children, read with it in `list`. */
const trees = new WeakMap<Record<string, unknown>, ObservedListener[]>();
/** Pools of each load balancer that are no listener's default pool (a manifest has no place for them). */
const strayPools = new WeakMap<Record<string, unknown>, number>();

const dnsLabel = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const listenerProtocols = new Set(['HTTP', 'HTTPS', 'TCP', 'UDP']);
const algorithms = new Set(['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP']);
const monitorTypes = new Set(['HTTP', 'HTTPS', 'TCP', 'PING', 'UDP-CONNECT', 'TLS-HELLO']);

/** Why the tree cannot be written as a manifest, or undefined. */
function unsayable(raw: Record<string, unknown>, tree: readonly ObservedListener[]): string | undefined {
  const vipSubnet = typeof raw.vip_subnet_id === 'string' ? raw.vip_subnet_id : null;
  if ((strayPools.get(raw) ?? 0) > 0) return "a pool that is no listener's default pool has no place in a LoadBalancer manifest";
  for (const l of tree) {
    if (!dnsLabel.test(l.shape.name)) return `listener "${l.shape.name}" has no name a manifest can give (a DNS label)`;
    if (!listenerProtocols.has(l.shape.protocol)) return `listener ${l.shape.name} uses protocol ${l.shape.protocol}, which the kind does not make`;
    const p = l.pool;
    if (!p) continue;
    if (p.shape.protocol !== poolProtocol(l.shape.protocol))
      return `the pool of listener ${l.shape.name} speaks ${p.shape.protocol}, not its listener's ${l.shape.protocol}`;
    if (!algorithms.has(p.shape.lb_algorithm)) return `the pool of listener ${l.shape.name} uses ${p.shape.lb_algorithm}`;
    if (p.healthmonitor && !monitorTypes.has(p.healthmonitor.shape.type))
      return `the monitor of listener ${l.shape.name} is of type ${p.healthmonitor.shape.type}`;
    for (const m of p.members) {
      if (m.shape.name !== '' && !dnsLabel.test(m.shape.name))
        return `member "${m.shape.name}" of listener ${l.shape.name} has no name a manifest can give (a DNS label)`;
      if (vipSubnet && m.shape.subnet_id === null)
        return `member ${m.shape.address} of listener ${l.shape.name} has no subnet while the VIP has one (a manifest gives it the VIP's)`;
    }
  }
  return undefined;
}

interface NicAddress {
  /** The server's id: named through `ref` only when a member stands on it (a ref of a server left out would import it). */
  device: string;
  subnet: string;
}

/** Exported VMs' fixed addresses: address → the server and the subnet. */
function vmAddresses(s: ExportScope): Map<string, NicAddress[]> {
  const vms = new Set(s.listed('VirtualMachine').map((v) => String(v.id)));
  const out = new Map<string, NicAddress[]>();
  for (const port of s.listed('Port')) {
    const device = typeof port.device_id === 'string' ? port.device_id : '';
    if (!vms.has(device)) continue;
    for (const ip of (port.fixed_ips as { subnet_id: string; ip_address: string }[] | undefined) ?? []) {
      const key = canonicalIp(ip.ip_address);
      out.set(key, [...(out.get(key) ?? []), { device, subnet: ip.subnet_id }]);
    }
  }
  return out;
}

function listenersOf(raw: Record<string, unknown>, tree: readonly ObservedListener[], s: ExportScope): Record<string, unknown>[] {
  const vipSubnet = typeof raw.vip_subnet_id === 'string' ? raw.vip_subnet_id : null;
  const byAddress = vmAddresses(s);
  return tree.map((l) => {
    const out: Record<string, unknown> = { name: l.shape.name, protocol: l.shape.protocol, port: l.shape.protocol_port };
    if (l.shape.connection_limit !== -1) out.connectionLimit = l.shape.connection_limit;
    const p = l.pool;
    if (!p) return out;
    const pool: Record<string, unknown> = {};
    if (p.shape.lb_algorithm !== 'ROUND_ROBIN') pool.lbAlgorithm = p.shape.lb_algorithm;
    // By Octavia's name: the order Octavia lists members in is not stable, a manifest's should be.
    pool.members = [...p.members]
      .sort((a, b) => String(a.shape.name).localeCompare(String(b.shape.name)))
      .map((m) => {
        const member: Record<string, unknown> = {};
        const subnet = m.shape.subnet_id;
        // By VM when the address is that VM's on the member's subnet (what desired() reads back); else by address.
        const vm = byAddress.get(m.shape.address)?.find((a) => subnet === null || a.subnet === subnet);
        if (vm) member.vmRef = { name: s.ref('VirtualMachine', vm.device) };
        else member.address = m.shape.address;
        member.port = m.shape.protocol_port;
        if (m.shape.weight !== 1) member.weight = m.shape.weight;
        if (subnet !== null && subnet !== vipSubnet) member.subnetRef = { name: s.ref('Subnet', subnet) };
        const spec = { ...member } as Parameters<typeof memberName>[0];
        if (memberName(spec) !== m.shape.name) member.name = m.shape.name;
        return member;
      });
    const hm = p.healthmonitor?.shape;
    if (hm) {
      const monitor: Record<string, unknown> = { type: hm.type, delay: hm.delay, timeout: hm.timeout, maxRetries: hm.max_retries };
      if (hm.max_retries_down !== 3) monitor.maxRetriesDown = hm.max_retries_down;
      if (hm.url_path !== undefined && hm.url_path !== '/') monitor.urlPath = hm.url_path;
      if (hm.expected_codes !== undefined && hm.expected_codes !== '200') monitor.expectedCodes = hm.expected_codes;
      if (hm.http_method !== undefined && hm.http_method !== 'GET') monitor.httpMethod = hm.http_method;
      pool.healthMonitor = monitor;
    }
    out.pool = pool;
    return out;
  });
}

export const loadBalancerExport: KindExport = {
  kind: 'LoadBalancer',
  async list(s) {
    const api = s.loadBalancer;
    if (!api || !(await hasOctavia(api))) return [];
    const lbs = await projectItems(s, 'LoadBalancer', 'project_id', (project) => api.list('/lbaas/loadbalancers', 'loadbalancers', { project_id: project }));
    if (lbs.length === 0) return lbs;
    // Every child, whoever made it: adoption takes the whole tree.
    const read = await readTrees({ api, owner: '', projectId: s.projectId, everything: true }, new Map(lbs.map((lb) => [String(lb.id), ''])));
    const pools = await api.list<Record<string, unknown>>('/lbaas/pools', 'pools', { project_id: s.projectId });
    for (const lb of lbs) {
      const tree = read.get(String(lb.id)) ?? [];
      trees.set(lb, tree);
      const defaults = new Set(tree.flatMap((l) => (l.pool ? [l.pool.id] : [])));
      strayPools.set(lb, pools.filter((p) => (p.loadbalancers as { id?: string }[] | undefined)?.[0]?.id === lb.id && !defaults.has(String(p.id))).length);
    }
    return lbs;
  },
  observeOnlyWhy: (raw) => unsayable(raw, trees.get(raw) ?? []),
  spec(raw, s) {
    const spec: Record<string, unknown> = {};
    const description = text(raw.description);
    if (description) spec.description = description;
    if (typeof raw.vip_subnet_id === 'string') spec.vip = { subnetRef: { name: s.ref('Subnet', raw.vip_subnet_id) } };
    const listeners = listenersOf(raw, trees.get(raw) ?? [], s);
    if (listeners.length > 0) spec.listeners = listeners;
    return spec;
  },
};
