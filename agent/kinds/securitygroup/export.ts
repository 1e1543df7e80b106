import type { KindExport } from '../kit/export.ts';
import { projectItems, tagsOf, text } from '../kit/export.ts';
import type { NeutronRule as RawRule } from './adapter.ts';

const allowAllEgress = (r: RawRule): boolean =>
  r.direction === 'egress' &&
  !r.protocol &&
  r.port_range_min == null &&
  r.port_range_max == null &&
  !r.remote_ip_prefix &&
  !r.remote_group_id &&
  !r.remote_address_group_id;

/** The group Neutron makes in every project: not a person's work, so it is referenced as an import where used. */
export function isDefaultGroup(raw: Record<string, unknown>): boolean {
  return raw.name === 'default';
}

/**
 * A security group with its rules; a rule naming a group names its manifest
 * (`remoteGroupRef`). Neutron's allow-all egress rules are left out, unless
 * some are missing: then the group says `deleteDefaultRules` and lists those it keeps.
 */
export const securityGroupExport: KindExport = {
  kind: 'SecurityGroup',
  list: (s) => projectItems(s, 'SecurityGroup', 'project_id', (project) => s.network.list('/security-groups', 'security_groups', { project_id: project })),
  skip: (raw) =>
    isDefaultGroup(raw) ? "the project's default group, made by Neutron (exported as an observe-only import where a port or rule names it)" : undefined,
  spec(raw, s) {
    const spec: Record<string, unknown> = {};
    const description = text(raw.description);
    if (description) spec.description = description;
    if (raw.stateful === false) spec.stateful = false;
    const rules = Array.isArray(raw.security_group_rules) ? (raw.security_group_rules as RawRule[]) : [];
    const egress = new Set(rules.filter(allowAllEgress).map((r) => r.ethertype ?? 'IPv4'));
    const keepDefaults = egress.has('IPv4') && egress.has('IPv6');
    if (!keepDefaults) spec.deleteDefaultRules = true;
    const out: Record<string, unknown>[] = [];
    for (const r of rules) {
      if (allowAllEgress(r) && keepDefaults) continue;
      const rule: Record<string, unknown> = { direction: r.direction };
      if (r.ethertype && r.ethertype !== 'IPv4') rule.ethertype = r.ethertype;
      if (r.protocol) rule.protocol = r.protocol;
      if (typeof r.port_range_min === 'number') rule.portRangeMin = r.port_range_min;
      if (typeof r.port_range_max === 'number') rule.portRangeMax = r.port_range_max;
      if (r.remote_ip_prefix) rule.remoteIPPrefix = r.remote_ip_prefix;
      if (r.remote_group_id) rule.remoteGroupRef = { name: s.ref('SecurityGroup', r.remote_group_id) };
      if (r.description) rule.description = r.description;
      out.push(rule);
    }
    if (out.length > 0) spec.rules = out;
    const tags = tagsOf(raw);
    if (tags) spec.tags = tags;
    return spec;
  },
};
