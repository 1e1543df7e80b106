import type { Manifest } from '../../model/manifest.ts';
import type { SecurityGroupSpec } from '../../model/kinds.generated.ts';
import { OpenStackError } from '../../openstack/errors.ts';
import { parseDescriptionMarker, stableJson, withDescriptionMarker, type Marker } from '../../ownership/marker.ts';
import { openstackName, type AdapterContext, type KindAdapter, type Remote } from '../kit/adapter.ts';
import {
  canonicalPrefix,
  canonicalSort,
  describedUpdate,
  findNeutron,
  getNeutron,
  neutronDescription,
  observeNeutron,
  observeNeutronCloud,
  observeNeutronSome,
  putTags,
  remarkNeutron,
  sortedTags,
} from '../kit/neutron.ts';
import { neutronOwnership } from '../kit/ownership.ts';

/**
 * A rule as compared: only the keys that are set, in Neutron's words. A rule
 * naming its own group says "self" on both sides, since the group's id does
 * not exist before the group does.
 */
interface Rule {
  direction: string;
  ethertype: string;
  protocol?: string;
  port_range_min?: number;
  port_range_max?: number;
  remote_ip_prefix?: string;
  remote_group_id?: string;
  remote_address_group_id?: string;
  description?: string;
}

type SpecRule = NonNullable<SecurityGroupSpec['rules']>[number];

const self = 'self';

/** A security-group rule as Neutron returns it (the adapter and the exporter read the same shape). */
export interface NeutronRule {
  direction: string;
  ethertype?: string | null;
  protocol?: string | null;
  port_range_min?: number | null;
  port_range_max?: number | null;
  remote_ip_prefix?: string | null;
  remote_group_id?: string | null;
  remote_address_group_id?: string | null;
  description?: string | null;
}

function rule(r: NeutronRule): Rule {
  const ethertype = r.ethertype ?? 'IPv4';
  let protocol = r.protocol?.toLowerCase();
  // Zed refuses "any" (it means no protocol) and stores IPv6 ICMP as ipv6-icmp.
  if (protocol === 'any') protocol = undefined;
  if (ethertype === 'IPv6' && (protocol === 'icmp' || protocol === 'icmpv6')) protocol = 'ipv6-icmp';
  const out: Rule = { direction: r.direction, ethertype };
  if (protocol) out.protocol = protocol;
  if (typeof r.port_range_min === 'number') out.port_range_min = r.port_range_min;
  if (typeof r.port_range_max === 'number') out.port_range_max = r.port_range_max;
  if (r.remote_ip_prefix) out.remote_ip_prefix = canonicalPrefix(r.remote_ip_prefix, false);
  if (r.remote_group_id) out.remote_group_id = r.remote_group_id;
  if (r.remote_address_group_id) out.remote_address_group_id = r.remote_address_group_id;
  if (r.description) out.description = r.description;
  return out;
}

/**
 * An allow-all egress rule: what Neutron adds to every new group, one per
 * ethertype. These are compared apart (`default_egress`): kept and ignored
 * unless deleteDefaultRules, and a duplicate of one cannot be created anyway.
 */
function allowAllEgress(r: Rule): boolean {
  return (
    r.direction === 'egress' &&
    !r.protocol &&
    r.port_range_min === undefined &&
    r.port_range_max === undefined &&
    !r.remote_ip_prefix &&
    !r.remote_group_id &&
    !r.remote_address_group_id
  );
}

interface RawRule extends Rule {
  id: string;
}

/** The group's rules with their ids, "self" for references to the group itself, descriptions without our marker. */
function rawRules(raw: Record<string, unknown>): { id: string; rule: Rule }[] {
  const list = Array.isArray(raw.security_group_rules) ? (raw.security_group_rules as RawRule[]) : [];
  return list.map((r) => ({
    id: r.id,
    rule: rule({
      ...r,
      remote_group_id: r.remote_group_id === raw.id ? self : r.remote_group_id,
      description: parseDescriptionMarker(r.description).description,
    }),
  }));
}

/** `wanted` less what `present` holds, counted (two equal rules are two). */
function subtract(wanted: readonly Rule[], present: readonly Rule[]): Rule[] {
  const have = new Map<string, number>();
  for (const r of present) have.set(stableJson(r), (have.get(stableJson(r)) ?? 0) + 1);
  return wanted.filter((r) => {
    const n = have.get(stableJson(r)) ?? 0;
    if (n > 0) have.set(stableJson(r), n - 1);
    return n === 0;
  });
}

const ethertypes = (rules: readonly Rule[]): string[] => [...new Set(rules.map((r) => r.ethertype))].sort();

const toRemote = (raw: Record<string, unknown>, description: string): Remote => {
  const rules = rawRules(raw).map((r) => r.rule);
  return {
    id: String(raw.id),
    name: String(raw.name),
    raw,
    fields: {
      name: raw.name,
      description,
      stateful: raw.stateful,
      rules: canonicalSort(rules.filter((r) => !allowAllEgress(r))),
      default_egress: ethertypes(rules.filter(allowAllEgress)),
      tags: sortedTags(raw),
    },
  };
};

const specRule = (r: SpecRule, remoteGroup: string | undefined): Rule =>
  rule({
    direction: r.direction,
    ethertype: r.ethertype,
    protocol: r.protocol,
    port_range_min: r.portRangeMin,
    port_range_max: r.portRangeMax,
    remote_ip_prefix: r.remoteIPPrefix,
    remote_group_id: remoteGroup,
    description: r.description,
  });

/**
 * The declared rules with references turned into ids; undefined while a
 * group named by a rule does not exist yet (groups may name each other, so
 * all are created first and their rules follow on a later step).
 */
function resolveRules(rules: readonly SpecRule[], m: Manifest, ctx: AdapterContext): Rule[] | undefined {
  const out: Rule[] = [];
  for (const r of rules) {
    let remoteGroup: string | undefined;
    if (r.remoteGroupRef) {
      if (r.remoteGroupRef.name === m.metadata.name) remoteGroup = self;
      else {
        try {
          remoteGroup = ctx.idOf('SecurityGroup', r.remoteGroupRef.name);
        } catch {
          return undefined;
        }
      }
    }
    out.push(specRule(r, remoteGroup));
  }
  return out;
}

/** A rule as Neutron takes it: the group's id for "self", the group's marker in the description (whose rule it is, found again after a lost answer). */
function ruleBody(groupId: string, r: Rule, marker: Marker | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = { ...r, security_group_id: groupId, remote_group_id: r.remote_group_id === self ? groupId : r.remote_group_id };
  const described = marker ? withDescriptionMarker(r.description, marker) : undefined;
  // Neutron keeps 255 characters: a long description goes without the marker (the rule is still found by its content).
  if (described && described.length <= 255) body.description = described;
  return body;
}

/**
 * The missing rules of a group in one POST (Neutron's bulk create, all or
 * none), each carrying the group's marker. A bulk that fails (refused, or
 * its answer lost after Neutron made it) is never simply sent again: the
 * group's rules are read back, those that exist are adopted, and the rest go
 * one at a time, so a refused rule fails alone with its own error. One
 * group per POST: Neutron refuses a bulk that holds rules of several groups
 * (400, "Only allowed to update rules for one security profile at a time").
 */
async function createRules(ctx: AdapterContext, remote: Remote, rules: readonly Rule[]): Promise<void> {
  if (rules.length === 0) return;
  if (rules.length > 1) {
    try {
      await ctx.apis.network.post('/security-group-rules', { security_group_rules: rules.map((r) => ruleBody(remote.id, r, remote.marker)) });
      return;
    } catch (err) {
      if (!(err instanceof OpenStackError)) throw err;
    }
  }
  const present =
    rules.length > 1
      ? rawRules((await ctx.apis.network.get<{ security_group: Record<string, unknown> }>(`/security-groups/${remote.id}`)).security_group).map((r) => r.rule)
      : [];
  for (const r of subtract(rules, present)) await createRule(ctx, ruleBody(remote.id, r, remote.marker));
}

async function createRule(ctx: AdapterContext, body: Record<string, unknown>): Promise<void> {
  try {
    await ctx.apis.network.post('/security-group-rules', { security_group_rule: body });
  } catch (err) {
    // Already there (a stale observation): the goal is reached.
    if (!(err instanceof OpenStackError && err.conflict && /already exists/i.test(err.detail))) throw err;
  }
}

function createBody(desired: Record<string, unknown>, marker: Marker): Record<string, unknown> {
  const body: Record<string, unknown> = { name: desired.name, description: neutronDescription(desired, marker) };
  if (desired.stateful !== undefined) body.stateful = desired.stateful;
  return body;
}

export const securityGroup: KindAdapter = {
  kind: 'SecurityGroup',
  ownership: neutronOwnership('a security group'),
  service: 'network',
  fields: {
    name: 'update',
    description: 'update',
    stateful: 'replace',
    rules: 'update',
    default_egress: 'update',
    tags: 'update',
  },

  observe: (ctx) => observeNeutron(ctx, 'security-groups', toRemote),

  observeSome: (ctx, wanted) => observeNeutronSome(ctx, 'security-groups', wanted, toRemote),

  observeCloud: (ctx) => observeNeutronCloud(ctx, 'security-groups', toRemote),

  desired(m, ctx) {
    const spec = m.spec as SecurityGroupSpec;
    const out: Record<string, unknown> = { name: openstackName(m) };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.stateful !== undefined) out.stateful = spec.stateful;
    if (spec.rules) {
      const rules = resolveRules(spec.rules, m, ctx);
      if (rules) out.rules = canonicalSort(rules.filter((r) => !allowAllEgress(r)));
    }
    // Allow-all egress rules need no reference: their set is known even when the other rules wait.
    const declared = ethertypes(
      (spec.rules ?? [])
        .filter((r) => !r.remoteGroupRef)
        .map((r) => specRule(r, undefined))
        .filter(allowAllEgress),
    );
    if (spec.deleteDefaultRules === true) out.default_egress = declared;
    else if (declared.length > 0) out.default_egress = ['IPv4', 'IPv6'];
    if (spec.tags) out.tags = [...spec.tags].sort();
    return out;
  },

  // The group only: its rules may name groups not created yet, so they come with the follow-up update.
  async create(ctx, _m, desired, marker) {
    const res = await ctx.apis.network.post<{ security_group: Record<string, unknown> }>('/security-groups', { security_group: createBody(desired, marker) });
    return { ...toRemote(res.security_group, typeof desired.description === 'string' ? desired.description : ''), marker };
  },

  bulkCreate: {
    collection: 'security-groups',
    key: 'security_groups',
    body: (_ctx, _m, desired, marker) => createBody(desired, marker),
    remote: (raw, desired, marker) => ({ ...toRemote(raw, typeof desired.description === 'string' ? desired.description : ''), marker }),
    // A group's create names nothing else and no admin-only field (its rules follow with the project's token).
    scope: () => 'admin',
  },

  async update(ctx, remote, changes) {
    const { tags, rules, default_egress: defaultEgress, ...rest } = changes;
    if (Object.keys(rest).length > 0) await ctx.apis.network.put(`/security-groups/${remote.id}`, { security_group: describedUpdate(remote, rest) });

    const current = rawRules(remote.raw);
    const obsolete: string[] = [];
    const missing: Rule[] = [];
    if (Array.isArray(rules)) {
      const wanted = new Map<string, Rule[]>();
      for (const r of rules as Rule[]) wanted.set(stableJson(r), [...(wanted.get(stableJson(r)) ?? []), r]);
      for (const { id, rule: r } of current.filter((c) => !allowAllEgress(c.rule))) {
        const same = wanted.get(stableJson(r));
        if (same?.length) same.pop();
        else obsolete.push(id);
      }
      for (const left of wanted.values()) missing.push(...left);
    }
    if (Array.isArray(defaultEgress)) {
      const wanted = new Set(defaultEgress as string[]);
      const present = current.filter((c) => allowAllEgress(c.rule));
      obsolete.push(...present.filter((c) => !wanted.has(c.rule.ethertype)).map((c) => c.id));
      for (const ethertype of wanted) if (!present.some((c) => c.rule.ethertype === ethertype)) missing.push({ direction: 'egress', ethertype });
    }
    // Deletes first: a changed rule that differs only in its description would collide with its old self.
    for (const id of obsolete) await ctx.apis.network.remove(`/security-group-rules/${id}`);
    await createRules(ctx, remote, missing);

    if ('tags' in changes) await putTags(ctx, 'security-groups', remote.id, tags);
  },

  async delete(ctx, remote) {
    await ctx.apis.network.remove(`/security-groups/${remote.id}`);
  },

  // Adoption: the group's own description carries the marker; its rules stay as they are.
  remark: remarkNeutron('security-groups', 'security_group'),

  get: (ctx, id) => getNeutron(ctx, 'security-groups', 'security_group', id, toRemote),

  find: (ctx, filter) => findNeutron(ctx, 'security-groups', filter, toRemote),
};
