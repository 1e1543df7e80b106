import type { Diagnostic } from '../diagnostic.ts';
import { addressOf, type Manifest } from '../model/manifest.ts';
import { cidrContains, cidrsOverlap, formatCidr, formatIp, lastAddress, parseCidr, parseIp, type Cidr } from './ip.ts';
import { diagnosticAt } from './report.ts';

/**
 * Address arithmetic Neutron would reject at create time, caught before
 * anything is applied: CIDR form, gateways and pools inside their subnet,
 * subnets of one network that overlap, security-group port ranges, and port
 * addresses inside their subnet.
 */
export function checkNetworkRules(manifests: Manifest[], byAddress: Map<string, Manifest>): Diagnostic[] {
  const out: Diagnostic[] = [];
  const subnetsByNetwork = new Map<string, { m: Manifest; cidr: Cidr }[]>();
  for (const m of manifests) {
    if (m.kind === 'Subnet') {
      const cidr = checkSubnet(m, out);
      const network = refName(m.spec.networkRef);
      if (cidr && network) {
        const key = addressOf('Network', network, m.metadata.namespace);
        const list = subnetsByNetwork.get(key) ?? [];
        list.push({ m, cidr });
        subnetsByNetwork.set(key, list);
      }
    } else if (m.kind === 'SecurityGroup') {
      checkSecurityGroup(m, out);
    } else if (m.kind === 'Port') {
      checkPortAddresses(m, byAddress, out);
    }
  }
  for (const subnets of subnetsByNetwork.values()) {
    subnets.sort((a, b) => (a.m.address < b.m.address ? -1 : 1));
    for (let i = 0; i < subnets.length; i++) {
      for (let j = 0; j < i; j++) {
        const a = subnets[j]!;
        const b = subnets[i]!;
        if (cidrsOverlap(a.cidr, b.cidr)) {
          out.push(diagnosticAt(b.m, 'subnet.overlap', ['spec', 'cidr'], `${formatCidr(b.cidr)} overlaps ${formatCidr(a.cidr)} of Subnet "${a.m.metadata.name}" on the same network; Neutron refuses overlapping subnets on one network, pick a disjoint range`));
        }
      }
    }
  }
  return out;
}

function checkSubnet(m: Manifest, out: Diagnostic[]): Cidr | undefined {
  const spec = m.spec;
  const cidr = typeof spec.cidr === 'string' ? parseCidr(spec.cidr) : undefined;
  if (!cidr) return undefined; // the schema's format check already reported it
  const ipVersion = typeof spec.ipVersion === 'number' ? spec.ipVersion : 4;
  if (cidr.version !== ipVersion) {
    out.push(diagnosticAt(m, 'subnet.ip-version', ['spec', 'cidr'], `${String(spec.cidr)} is an IPv${cidr.version} range but ipVersion is ${ipVersion}; set ipVersion: ${cidr.version} or use an IPv${ipVersion} CIDR`));
    return undefined;
  }
  if (cidr.address !== cidr.network) {
    out.push(diagnosticAt(m, 'subnet.cidr-host-bits', ['spec', 'cidr'], `${String(spec.cidr)} has host bits set; Neutron expects the network address: write ${formatCidr(cidr)}`));
  }
  if (cidr.version === 4 && cidr.prefix > 30) {
    out.push(diagnosticAt(m, 'subnet.too-small', ['spec', 'cidr'], `a /${cidr.prefix} leaves no room for a gateway and hosts; use /30 or larger`));
  }
  const gateway = typeof spec.gatewayIP === 'string' ? parseIp(spec.gatewayIP) : undefined;
  if (gateway) {
    if (!cidrContains(cidr, gateway)) {
      out.push(diagnosticAt(m, 'subnet.gateway-outside', ['spec', 'gatewayIP'], `gateway ${String(spec.gatewayIP)} is outside ${formatCidr(cidr)}; use an address inside the subnet (usually the first one)`));
    } else if (cidr.version === 4 && cidr.prefix < 31 && (gateway.value === cidr.network || gateway.value === lastAddress(cidr))) {
      out.push(diagnosticAt(m, 'subnet.gateway-invalid', ['spec', 'gatewayIP'], `gateway ${String(spec.gatewayIP)} is the network or broadcast address of ${formatCidr(cidr)}; use a host address`));
    }
  }
  const pools = Array.isArray(spec.allocationPools) ? (spec.allocationPools as { start?: unknown; end?: unknown }[]) : [];
  const ranges: { start: bigint; end: bigint; index: number }[] = [];
  pools.forEach((pool, index) => {
    const start = typeof pool.start === 'string' ? parseIp(pool.start) : undefined;
    const end = typeof pool.end === 'string' ? parseIp(pool.end) : undefined;
    if (!start || !end) return;
    for (const [field, ip] of [['start', start], ['end', end]] as const) {
      if (!cidrContains(cidr, ip)) {
        out.push(diagnosticAt(m, 'subnet.pool-outside', ['spec', 'allocationPools', index, field], `${formatIp(ip.version, ip.value)} is outside ${formatCidr(cidr)}; allocation pools must lie inside the subnet`));
        return;
      }
    }
    if (start.value > end.value) {
      out.push(diagnosticAt(m, 'subnet.pool-invalid', ['spec', 'allocationPools', index], `the pool starts at ${String(pool.start)} after it ends at ${String(pool.end)}; swap start and end`));
      return;
    }
    if (gateway && gateway.value >= start.value && gateway.value <= end.value) {
      out.push(diagnosticAt(m, 'subnet.gateway-in-pool', ['spec', 'allocationPools', index], `the pool ${String(pool.start)}-${String(pool.end)} contains the gateway ${String(spec.gatewayIP)}; Neutron refuses that, start the pool after the gateway`));
    }
    for (const other of ranges) {
      if (start.value <= other.end && other.start <= end.value) {
        out.push(diagnosticAt(m, 'subnet.pool-overlap', ['spec', 'allocationPools', index], `this pool overlaps allocationPools[${other.index}]; make the pools disjoint`));
      }
    }
    ranges.push({ start: start.value, end: end.value, index });
  });
  return cidr;
}

const portProtocols = new Set(['tcp', 'udp', 'sctp', 'dccp', 'udplite', '6', '17', '132', '33', '136']);
const icmpProtocols = new Set(['icmp', 'icmpv6', 'ipv6-icmp', '1', '58']);

function checkSecurityGroup(m: Manifest, out: Diagnostic[]): void {
  const rules = Array.isArray(m.spec.rules) ? (m.spec.rules as Record<string, unknown>[]) : [];
  rules.forEach((rule, i) => {
    const path = ['spec', 'rules', i];
    const min = typeof rule.portRangeMin === 'number' ? rule.portRangeMin : undefined;
    const max = typeof rule.portRangeMax === 'number' ? rule.portRangeMax : undefined;
    const protocol = typeof rule.protocol === 'string' ? rule.protocol.toLowerCase() : typeof rule.protocol === 'number' ? String(rule.protocol) : undefined;
    if (min !== undefined || max !== undefined) {
      if (protocol === undefined || (!portProtocols.has(protocol) && !icmpProtocols.has(protocol))) {
        out.push(diagnosticAt(m, 'securitygroup.ports-without-protocol', [...path, 'portRangeMin'], `port ranges need a protocol that has ports (tcp, udp, sctp, dccp, udplite) or icmp type/code; set protocol${protocol ? ` instead of "${protocol}"` : ''}`));
      } else if (icmpProtocols.has(protocol)) {
        for (const [field, v] of [['portRangeMin', min], ['portRangeMax', max]] as const) {
          if (v !== undefined && v > 255) out.push(diagnosticAt(m, 'securitygroup.icmp-range', [...path, field], `for ${protocol}, portRangeMin is the ICMP type and portRangeMax the code: both are 0-255`));
        }
        if (max !== undefined && min === undefined) out.push(diagnosticAt(m, 'securitygroup.icmp-range', [...path, 'portRangeMax'], 'an ICMP code (portRangeMax) needs an ICMP type (portRangeMin)'));
      } else {
        if (min !== undefined && max !== undefined && min > max) out.push(diagnosticAt(m, 'securitygroup.port-range', [...path, 'portRangeMin'], `portRangeMin ${min} is greater than portRangeMax ${max}; swap them`));
        if (min === 0 || max === 0) out.push(diagnosticAt(m, 'securitygroup.port-range', [...path, min === 0 ? 'portRangeMin' : 'portRangeMax'], `port 0 is not a valid ${protocol} port; use 1-65535`));
        if ((min === undefined) !== (max === undefined)) out.push(diagnosticAt(m, 'securitygroup.port-range', path, 'set both portRangeMin and portRangeMax (equal for a single port)'));
      }
    }
    const prefix = typeof rule.remoteIPPrefix === 'string' ? parseCidr(rule.remoteIPPrefix) : undefined;
    const ethertype = typeof rule.ethertype === 'string' ? rule.ethertype : 'IPv4';
    if (prefix && `IPv${prefix.version}` !== ethertype) {
      out.push(diagnosticAt(m, 'securitygroup.ethertype', [...path, 'remoteIPPrefix'], `${String(rule.remoteIPPrefix)} is an IPv${prefix.version} prefix but ethertype is ${ethertype}; set ethertype: IPv${prefix.version}`));
    }
  });
}

function checkPortAddresses(m: Manifest, byAddress: Map<string, Manifest>, out: Diagnostic[]): void {
  const fixed = Array.isArray(m.spec.fixedIPs) ? (m.spec.fixedIPs as Record<string, unknown>[]) : [];
  fixed.forEach((entry, i) => {
    const subnetName = refName(entry.subnetRef);
    const ip = typeof entry.ipAddress === 'string' ? parseIp(entry.ipAddress) : undefined;
    if (!subnetName || !ip) return;
    const subnet = byAddress.get(addressOf('Subnet', subnetName, m.metadata.namespace));
    const cidr = subnet && typeof subnet.spec.cidr === 'string' ? parseCidr(subnet.spec.cidr) : undefined;
    if (cidr && !cidrContains(cidr, ip)) {
      out.push(diagnosticAt(m, 'port.ip-outside', ['spec', 'fixedIPs', i, 'ipAddress'], `${String(entry.ipAddress)} is outside ${formatCidr(cidr)} of Subnet "${subnetName}"; pick an address inside it`));
    }
    const network = refName(m.spec.networkRef);
    const subnetNetwork = subnet ? refName(subnet.spec.networkRef) : undefined;
    if (subnet && network && subnetNetwork && network !== subnetNetwork) {
      out.push(diagnosticAt(m, 'port.subnet-network', ['spec', 'fixedIPs', i, 'subnetRef'], `Subnet "${subnetName}" belongs to Network "${subnetNetwork}", not to this port's Network "${network}"`));
    }
  });
}

function refName(ref: unknown): string | undefined {
  const name = (ref as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}
