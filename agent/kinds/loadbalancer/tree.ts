import { markerFromTags, stableJson, userTags } from '../../ownership/marker.ts';

/*
 * A load balancer's children as one comparable value: its listeners, each
 * with its default pool, the pool's members and health monitor, in the shape
 * both `desired` and `observe` report (sorted by name, defaults filled in),
 * and the one next Octavia call that brings what is observed closer to what
 * is desired. Pure: the adapter reads Octavia and performs the step.
 */

export interface MonitorShape {
  type: string;
  delay: number;
  timeout: number;
  max_retries: number;
  max_retries_down: number;
  /** HTTP and HTTPS monitors only. */
  url_path?: string;
  expected_codes?: string;
  http_method?: string;
}

export interface MemberShape {
  name: string;
  address: string;
  protocol_port: number;
  weight: number;
  subnet_id: string | null;
}

export interface PoolShape {
  protocol: string;
  lb_algorithm: string;
  members: MemberShape[];
  healthmonitor: MonitorShape | null;
}

export interface ListenerShape {
  name: string;
  protocol: string;
  protocol_port: number;
  connection_limit: number;
  pool: PoolShape | null;
}

/** An Octavia child as observed: its id, its status and its shape. */
export interface Observed<S> {
  id: string;
  provisioning_status: string;
  operating_status: string;
  /** Its tags, ours and the user's (adoption keeps the user's beside ours). */
  tags?: string[];
  shape: S;
}

export interface ObservedListener extends Observed<Omit<ListenerShape, 'pool'>> {
  pool: (Observed<Omit<PoolShape, 'members' | 'healthmonitor'>> & { members: Observed<MemberShape>[]; healthmonitor: Observed<MonitorShape> | null }) | null;
}

/** Fields Octavia cannot change: a difference there deletes the child and makes it again. */
const fixed = {
  listener: ['protocol', 'protocol_port'] as const,
  pool: ['protocol'] as const,
  member: ['address', 'protocol_port', 'subnet_id'] as const,
  monitor: ['type'] as const,
};

export type Step =
  | { op: 'delete'; what: 'member'; poolId: string; id: string; why: string }
  | { op: 'delete'; what: 'healthmonitor' | 'pool' | 'listener'; id: string; why: string }
  | { op: 'create'; what: 'listener'; listener: ListenerShape }
  | { op: 'create'; what: 'pool'; listenerId: string; listener: string; pool: PoolShape }
  | { op: 'create'; what: 'healthmonitor'; poolId: string; listener: string; monitor: MonitorShape }
  | { op: 'create'; what: 'member'; poolId: string; listener: string; member: MemberShape }
  | { op: 'update'; what: 'listener'; id: string; body: Record<string, unknown>; name: string }
  | { op: 'update'; what: 'pool'; id: string; body: Record<string, unknown>; name: string }
  | { op: 'update'; what: 'healthmonitor'; id: string; body: Record<string, unknown>; name: string }
  | { op: 'update'; what: 'member'; poolId: string; id: string; body: Record<string, unknown>; name: string };

/** The pool protocol a listener of `protocol` forwards with (HTTPS passed through). */
export function poolProtocol(listenerProtocol: string): string {
  return listenerProtocol;
}

export const httpMonitor = (type: string): boolean => type === 'HTTP' || type === 'HTTPS';

/** The observed tree in the shape `desired` compares against. */
export function shapeOf(listeners: readonly ObservedListener[]): ListenerShape[] {
  return sortByName(
    listeners.map((l) => ({
      ...l.shape,
      pool: l.pool ? { ...l.pool.shape, members: sortByName(l.pool.members.map((m) => m.shape)), healthmonitor: l.pool.healthmonitor?.shape ?? null } : null,
    })),
  );
}

export function sortByName<T extends { name: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function differs<T extends object>(a: T, b: T, keys: readonly (keyof T)[]): (keyof T)[] {
  return keys.filter((k) => stableJson(a[k]) !== stableJson(b[k]));
}

function changed<T extends object>(observed: T, desired: T, keys: readonly (keyof T)[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of differs(observed, desired, keys)) out[k as string] = desired[k];
  return out;
}

const failed = (o: { provisioning_status: string }): boolean => o.provisioning_status === 'ERROR';

/** Why an observed child goes (its parent goes, it is no longer declared, a field Octavia cannot change changed, it is in ERROR), or undefined. */
function goes(o: { provisioning_status: string }, declared: boolean, fixedChange: readonly PropertyKey[], parent?: string): string | undefined {
  if (parent) return parent;
  if (!declared) return 'no longer declared';
  if (fixedChange.length) return `${fixedChange.map(String).join(', ')} cannot change in Octavia`;
  return failed(o) ? 'in ERROR' : undefined;
}

/**
 * The next call, in Octavia's order: deletions first and children before
 * their parents (members, monitors, pools, listeners), then creations and
 * updates parents first. A child in ERROR is deleted and made again (Octavia's
 * own advice for a child it could not provision). Undefined: converged.
 */
export function nextStep(observed: readonly ObservedListener[], desired: readonly ListenerShape[]): Step | undefined {
  const want = new Map(desired.map((l) => [l.name, l]));
  // What is deleted is decided once, parents first, and done children first.
  const goners: { listeners: Step[]; pools: Step[]; monitors: Step[]; members: Step[] } = { listeners: [], pools: [], monitors: [], members: [] };
  for (const l of observed) {
    const d = want.get(l.shape.name);
    const fixedChange = d ? differs(l.shape, d, fixed.listener) : [];
    const listenerGoes = goes(l, d !== undefined, fixedChange);
    if (listenerGoes) goners.listeners.push({ op: 'delete', what: 'listener', id: l.id, why: `listener ${l.shape.name}: ${listenerGoes}` });
    const p = l.pool;
    if (!p) continue;
    const dp = listenerGoes ? null : (d?.pool ?? null);
    const poolFixed = dp ? differs(p.shape, dp, fixed.pool) : [];
    const poolGoes = goes(p, dp !== null, poolFixed, listenerGoes ? `its listener goes (${listenerGoes})` : undefined);
    if (poolGoes) goners.pools.push({ op: 'delete', what: 'pool', id: p.id, why: `pool of listener ${l.shape.name}: ${poolGoes}` });
    const hm = p.healthmonitor;
    if (hm) {
      const dm = poolGoes ? null : (dp?.healthmonitor ?? null);
      const monitorFixed = dm ? differs(hm.shape, dm, fixed.monitor) : [];
      const why = goes(hm, dm !== null, monitorFixed, poolGoes ? 'its pool goes' : undefined);
      if (why) goners.monitors.push({ op: 'delete', what: 'healthmonitor', id: hm.id, why: `health monitor of listener ${l.shape.name}: ${why}` });
    }
    const members = new Map((poolGoes ? [] : (dp?.members ?? [])).map((m) => [m.name, m]));
    for (const m of p.members) {
      const dm = members.get(m.shape.name);
      const memberFixed = dm ? differs(m.shape, dm, fixed.member) : [];
      const why = goes(m, dm !== undefined, memberFixed, poolGoes ? 'its pool goes' : undefined);
      if (why) goners.members.push({ op: 'delete', what: 'member', poolId: p.id, id: m.id, why: `member ${m.shape.name} of listener ${l.shape.name}: ${why}` });
    }
  }
  const deletion = goners.members[0] ?? goners.monitors[0] ?? goners.pools[0] ?? goners.listeners[0];
  if (deletion) return deletion;

  const have = new Map(observed.map((l) => [l.shape.name, l]));
  for (const d of desired) {
    const l = have.get(d.name);
    if (!l) return { op: 'create', what: 'listener', listener: d };
    const body = changed(l.shape, d, ['connection_limit']);
    if (Object.keys(body).length) return { op: 'update', what: 'listener', id: l.id, body, name: d.name };
    if (!d.pool) continue;
    if (!l.pool) return { op: 'create', what: 'pool', listenerId: l.id, listener: d.name, pool: d.pool };
    const poolBody = changed(l.pool.shape, d.pool, ['lb_algorithm']);
    if (Object.keys(poolBody).length) return { op: 'update', what: 'pool', id: l.pool.id, body: poolBody, name: d.name };
    const dm = d.pool.healthmonitor;
    const hm = l.pool.healthmonitor;
    if (dm && !hm) return { op: 'create', what: 'healthmonitor', poolId: l.pool.id, listener: d.name, monitor: dm };
    if (dm && hm) {
      const monitorBody = changed(hm.shape, dm, ['delay', 'timeout', 'max_retries', 'max_retries_down', 'url_path', 'expected_codes', 'http_method']);
      if (Object.keys(monitorBody).length) return { op: 'update', what: 'healthmonitor', id: hm.id, body: monitorBody, name: d.name };
    }
    const members = new Map(l.pool.members.map((m) => [m.shape.name, m]));
    for (const want of d.pool.members) {
      const m = members.get(want.name);
      if (!m) return { op: 'create', what: 'member', poolId: l.pool.id, listener: d.name, member: want };
      const memberBody = changed(m.shape, want, ['weight']);
      if (Object.keys(memberBody).length)
        return { op: 'update', what: 'member', poolId: l.pool.id, id: m.id, body: memberBody, name: `${d.name}/${want.name}` };
    }
  }
  return undefined;
}

/** Every child of ours, in the order a prune deletes them: members, monitors, pools, listeners. */
export function deletionOrder(observed: readonly ObservedListener[]): Step[] {
  const out: Step[] = [];
  const why = (what: string, l: ObservedListener): string => `${what} of listener ${l.shape.name}: its load balancer goes`;
  for (const l of observed)
    for (const m of l.pool?.members ?? []) out.push({ op: 'delete', what: 'member', poolId: l.pool!.id, id: m.id, why: why(`member ${m.shape.name}`, l) });
  for (const l of observed)
    if (l.pool?.healthmonitor) out.push({ op: 'delete', what: 'healthmonitor', id: l.pool.healthmonitor.id, why: why('health monitor', l) });
  for (const l of observed) if (l.pool) out.push({ op: 'delete', what: 'pool', id: l.pool.id, why: why('pool', l) });
  for (const l of observed) out.push({ op: 'delete', what: 'listener', id: l.id, why: `listener ${l.shape.name}: its load balancer goes` });
  return out;
}

/**
 * Adoption's writes on the children: our tags (`tags`) beside the user's on
 * each child not tagged so yet, parents first; a child carrying another
 * owner's marker is skipped (it is not the load balancer's owner's to give).
 */
export function adoptionSteps(observed: readonly ObservedListener[], owner: string, tags: readonly string[]): Step[] {
  const out: Step[] = [];
  const retag = (o: { tags?: string[] }): Record<string, unknown> | undefined => {
    const have = o.tags ?? [];
    const theirs = markerFromTags(have);
    if (theirs && theirs.owner !== owner) return undefined;
    if (tags.every((t) => have.includes(t))) return undefined;
    return { tags: [...userTags(have), ...tags] };
  };
  for (const l of observed) {
    const lb = retag(l);
    if (lb) out.push({ op: 'update', what: 'listener', id: l.id, body: lb, name: l.shape.name });
    const p = l.pool;
    if (!p) continue;
    const pb = retag(p);
    if (pb) out.push({ op: 'update', what: 'pool', id: p.id, body: pb, name: l.shape.name });
    const hb = p.healthmonitor && retag(p.healthmonitor);
    if (p.healthmonitor && hb) out.push({ op: 'update', what: 'healthmonitor', id: p.healthmonitor.id, body: hb, name: l.shape.name });
    for (const m of p.members) {
      const mb = retag(m);
      if (mb) out.push({ op: 'update', what: 'member', poolId: p.id, id: m.id, body: mb, name: `${l.shape.name}/${m.shape.name}` });
    }
  }
  return out;
}
