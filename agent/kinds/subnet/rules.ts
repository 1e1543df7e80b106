import { addressOf, type Manifest } from '../../model/manifest.ts';
import { cidrContains, cidrsOverlap, formatCidr, formatIp, lastAddress, parseCidr, parseIp, type Cidr } from '../../util/ip.ts';
import { refName, type KindRules, type RuleFinding } from '../kit/rule.ts';

/**
 * What Neutron would refuse at create time: the CIDR's form, gateways and
 * allocation pools inside their subnet, subnets of one network that overlap,
 * and fields that contradict each other.
 */
export const subnetRules: KindRules = {
  kind: 'Subnet',
  check(manifests) {
    const out: RuleFinding[] = [];
    const subnetsByNetwork = new Map<string, { m: Manifest; cidr: Cidr }[]>();
    for (const m of manifests) {
      checkFields(m, out);
      const cidr = checkAddresses(m, out);
      const network = refName(m.spec.networkRef);
      if (cidr && network) {
        const key = addressOf('Network', network, m.metadata.namespace);
        const list = subnetsByNetwork.get(key) ?? [];
        list.push({ m, cidr });
        subnetsByNetwork.set(key, list);
      }
    }
    for (const subnets of subnetsByNetwork.values()) {
      subnets.sort((a, b) => (a.m.address < b.m.address ? -1 : 1));
      for (let i = 0; i < subnets.length; i++) {
        for (let j = 0; j < i; j++) {
          const a = subnets[j]!;
          const b = subnets[i]!;
          if (cidrsOverlap(a.cidr, b.cidr)) {
            out.push({
              manifest: b.m,
              code: 'subnet.overlap',
              path: ['spec', 'cidr'],
              message:
                `${formatCidr(b.cidr)} overlaps ${formatCidr(a.cidr)} of Subnet "${a.m.metadata.name}" on the same network; ` +
                `Neutron refuses overlapping subnets on one network, pick a disjoint range`,
            });
          }
        }
      }
    }
    return out;
  },
};

function checkFields(m: Manifest, out: RuleFinding[]): void {
  const spec = m.spec;
  if (spec.disableGateway === true && spec.gatewayIP !== undefined) {
    out.push({
      manifest: m,
      code: 'subnet.gateway-conflict',
      path: ['spec', 'gatewayIP'],
      message: 'gatewayIP is set while disableGateway is true; remove one of them',
    });
  }
  if ((spec.ipVersion ?? 4) === 4) {
    for (const field of ['ipv6AddressMode', 'ipv6RAMode']) {
      if (spec[field] !== undefined)
        out.push({
          manifest: m,
          code: 'subnet.ipv6-mode',
          path: ['spec', field],
          message: `${field} applies to IPv6 subnets only; remove it or set ipVersion: 6`,
        });
    }
  }
}

function checkAddresses(m: Manifest, out: RuleFinding[]): Cidr | undefined {
  const spec = m.spec;
  const at = (code: string, path: (string | number)[], message: string): void => void out.push({ manifest: m, code, path, message });
  const cidr = typeof spec.cidr === 'string' ? parseCidr(spec.cidr) : undefined;
  if (!cidr) return undefined; // the schema's format check already reported it
  const ipVersion = typeof spec.ipVersion === 'number' ? spec.ipVersion : 4;
  if (cidr.version !== ipVersion) {
    at(
      'subnet.ip-version',
      ['spec', 'cidr'],
      `${String(spec.cidr)} is an IPv${cidr.version} range but ipVersion is ${ipVersion}; set ipVersion: ${cidr.version} or use an IPv${ipVersion} CIDR`,
    );
    return undefined;
  }
  if (cidr.address !== cidr.network) {
    at('subnet.cidr-host-bits', ['spec', 'cidr'], `${String(spec.cidr)} has host bits set; Neutron expects the network address: write ${formatCidr(cidr)}`);
  }
  if (cidr.version === 4 && cidr.prefix > 30) {
    at('subnet.too-small', ['spec', 'cidr'], `a /${cidr.prefix} leaves no room for a gateway and hosts; use /30 or larger`);
  }
  const gateway = typeof spec.gatewayIP === 'string' ? parseIp(spec.gatewayIP) : undefined;
  if (gateway) {
    if (!cidrContains(cidr, gateway)) {
      at(
        'subnet.gateway-outside',
        ['spec', 'gatewayIP'],
        `gateway ${String(spec.gatewayIP)} is outside ${formatCidr(cidr)}; use an address inside the subnet (usually the first one)`,
      );
    } else if (cidr.version === 4 && cidr.prefix < 31 && (gateway.value === cidr.network || gateway.value === lastAddress(cidr))) {
      at(
        'subnet.gateway-invalid',
        ['spec', 'gatewayIP'],
        `gateway ${String(spec.gatewayIP)} is the network or broadcast address of ${formatCidr(cidr)}; use a host address`,
      );
    }
  }
  const pools = Array.isArray(spec.allocationPools) ? (spec.allocationPools as { start?: unknown; end?: unknown }[]) : [];
  const ranges: { start: bigint; end: bigint; index: number }[] = [];
  pools.forEach((pool, index) => {
    const start = typeof pool.start === 'string' ? parseIp(pool.start) : undefined;
    const end = typeof pool.end === 'string' ? parseIp(pool.end) : undefined;
    if (!start || !end) return;
    for (const [field, ip] of [
      ['start', start],
      ['end', end],
    ] as const) {
      if (!cidrContains(cidr, ip)) {
        at(
          'subnet.pool-outside',
          ['spec', 'allocationPools', index, field],
          `${formatIp(ip.version, ip.value)} is outside ${formatCidr(cidr)}; allocation pools must lie inside the subnet`,
        );
        return;
      }
    }
    if (start.value > end.value) {
      at(
        'subnet.pool-invalid',
        ['spec', 'allocationPools', index],
        `the pool starts at ${String(pool.start)} after it ends at ${String(pool.end)}; swap start and end`,
      );
      return;
    }
    if (gateway && gateway.value >= start.value && gateway.value <= end.value) {
      at(
        'subnet.gateway-in-pool',
        ['spec', 'allocationPools', index],
        `the pool ${String(pool.start)}-${String(pool.end)} contains the gateway ${String(spec.gatewayIP)}; Neutron refuses that, start the pool after the gateway`,
      );
    }
    for (const other of ranges) {
      if (start.value <= other.end && other.start <= end.value) {
        at('subnet.pool-overlap', ['spec', 'allocationPools', index], `this pool overlaps allocationPools[${other.index}]; make the pools disjoint`);
      }
    }
    ranges.push({ start: start.value, end: end.value, index });
  });
  return cidr;
}
