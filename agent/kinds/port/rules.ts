import { cidrContains, formatCidr, parseCidr, parseIp } from '../../util/ip.ts';
import { refName, type KindRules, type RuleFinding } from '../kit/rule.ts';

/** A port's fixed addresses must lie inside their subnet, and that subnet must belong to the port's network. */
export const portRules: KindRules = {
  kind: 'Port',
  check(manifests, revision) {
    const out: RuleFinding[] = [];
    for (const m of manifests) {
      const fixed = Array.isArray(m.spec.fixedIPs) ? (m.spec.fixedIPs as Record<string, unknown>[]) : [];
      fixed.forEach((entry, i) => {
        const subnetName = refName(entry.subnetRef);
        const ip = typeof entry.ipAddress === 'string' ? parseIp(entry.ipAddress) : undefined;
        if (!subnetName || !ip) return;
        const subnet = revision.find('Subnet', subnetName, m.metadata.namespace);
        const cidr = subnet && typeof subnet.spec.cidr === 'string' ? parseCidr(subnet.spec.cidr) : undefined;
        if (cidr && !cidrContains(cidr, ip)) {
          out.push({
            manifest: m,
            code: 'port.ip-outside',
            path: ['spec', 'fixedIPs', i, 'ipAddress'],
            message: `${String(entry.ipAddress)} is outside ${formatCidr(cidr)} of Subnet "${subnetName}"; pick an address inside it`,
          });
        }
        const network = refName(m.spec.networkRef);
        const subnetNetwork = subnet ? refName(subnet.spec.networkRef) : undefined;
        if (subnet && network && subnetNetwork && network !== subnetNetwork) {
          out.push({
            manifest: m,
            code: 'port.subnet-network',
            path: ['spec', 'fixedIPs', i, 'subnetRef'],
            message: `Subnet "${subnetName}" belongs to Network "${subnetNetwork}", not to this port's Network "${network}"`,
          });
        }
      });
    }
    return out;
  },
};
