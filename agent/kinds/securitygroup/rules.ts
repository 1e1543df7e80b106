import { parseCidr } from '../../util/ip.ts';
import type { KindRules, RuleFinding } from '../kit/rule.ts';

const portProtocols = new Set(['tcp', 'udp', 'sctp', 'dccp', 'udplite', '6', '17', '132', '33', '136']);
const icmpProtocols = new Set(['icmp', 'icmpv6', 'ipv6-icmp', '1', '58']);

/** Rule port ranges that Neutron would refuse: ranges without a port protocol, ICMP type/code bounds, reversed ranges, and prefixes of the other IP version. */
export const securityGroupRules: KindRules = {
  kind: 'SecurityGroup',
  check(manifests) {
    const out: RuleFinding[] = [];
    for (const m of manifests) {
      const at = (code: string, path: (string | number)[], message: string): void => void out.push({ manifest: m, code, path, message });
      const rules = Array.isArray(m.spec.rules) ? (m.spec.rules as Record<string, unknown>[]) : [];
      rules.forEach((rule, i) => {
        const path = ['spec', 'rules', i];
        const min = typeof rule.portRangeMin === 'number' ? rule.portRangeMin : undefined;
        const max = typeof rule.portRangeMax === 'number' ? rule.portRangeMax : undefined;
        const protocol =
          typeof rule.protocol === 'string' ? rule.protocol.toLowerCase() : typeof rule.protocol === 'number' ? String(rule.protocol) : undefined;
        if (min !== undefined || max !== undefined) {
          if (protocol === undefined || (!portProtocols.has(protocol) && !icmpProtocols.has(protocol))) {
            at(
              'securitygroup.ports-without-protocol',
              [...path, 'portRangeMin'],
              `port ranges need a protocol that has ports (tcp, udp, sctp, dccp, udplite) or icmp type/code; set protocol${protocol ? ` instead of "${protocol}"` : ''}`,
            );
          } else if (icmpProtocols.has(protocol)) {
            for (const [field, v] of [
              ['portRangeMin', min],
              ['portRangeMax', max],
            ] as const) {
              if (v !== undefined && v > 255)
                at('securitygroup.icmp-range', [...path, field], `for ${protocol}, portRangeMin is the ICMP type and portRangeMax the code: both are 0-255`);
            }
            if (max !== undefined && min === undefined)
              at('securitygroup.icmp-range', [...path, 'portRangeMax'], 'an ICMP code (portRangeMax) needs an ICMP type (portRangeMin)');
          } else {
            if (min !== undefined && max !== undefined && min > max)
              at('securitygroup.port-range', [...path, 'portRangeMin'], `portRangeMin ${min} is greater than portRangeMax ${max}; swap them`);
            if (min === 0 || max === 0)
              at('securitygroup.port-range', [...path, min === 0 ? 'portRangeMin' : 'portRangeMax'], `port 0 is not a valid ${protocol} port; use 1-65535`);
            if ((min === undefined) !== (max === undefined))
              at('securitygroup.port-range', path, 'set both portRangeMin and portRangeMax (equal for a single port)');
          }
        }
        const prefix = typeof rule.remoteIPPrefix === 'string' ? parseCidr(rule.remoteIPPrefix) : undefined;
        const ethertype = typeof rule.ethertype === 'string' ? rule.ethertype : 'IPv4';
        if (prefix && `IPv${prefix.version}` !== ethertype) {
          at(
            'securitygroup.ethertype',
            [...path, 'remoteIPPrefix'],
            `${String(rule.remoteIPPrefix)} is an IPv${prefix.version} prefix but ethertype is ${ethertype}; set ethertype: IPv${prefix.version}`,
          );
        }
      });
    }
    return out;
  },
};
