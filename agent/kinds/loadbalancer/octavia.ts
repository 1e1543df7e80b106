import { KupenstackError } from '../../errors.ts';
import { CloudConfigError } from '../../openstack/errors.ts';
import { OpenStackError } from '../../openstack/errors.ts';
import type { ServiceClient } from '../../openstack/service.ts';
import { markerFromTags, markerTags, ownerTag, type Marker } from '../../ownership/marker.ts';
import type { AdapterContext } from '../kit/adapter.ts';
import { lookAgain } from '../kit/look-again.ts';
import { canonicalIp } from '../kit/neutron.ts';
import type { Looked } from '../../../lib/progress.ts';
import { httpMonitor, type ListenerShape, type MemberShape, type MonitorShape, type ObservedListener, type Step } from './tree.ts';

/*
 * Octavia's v2 API as the LoadBalancer kind uses it: reading a load
 * balancer's children (only those carrying our tags), waiting until the load
 * balancer takes a change, and performing one step.
 */

export type Raw = Record<string, unknown>;

export function octavia(ctx: AdapterContext): ServiceClient {
  return ctx.cloud.client('load-balancer', { projectId: ctx.projectId });
}

/**
 * A cloud without Octavia holds no load balancer: a prune (which observes
 * every kind) must not fail there. Read from the token's catalog, no call.
 */
export async function hasOctavia(api: ServiceClient): Promise<boolean> {
  try {
    await api.base();
    return true;
  } catch (err) {
    if (err instanceof CloudConfigError) return false;
    throw err;
  }
}

/** The tags a child carries: the load balancer's owner and ref, no spec hash (the children's changes are the tree's). */
export function childTags(marker: Pick<Marker, 'owner' | 'ref'>): string[] {
  return markerTags({ ...marker, specHash: '' }).slice(0, 2);
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown, d: number): number => (typeof v === 'number' ? v : d);

export function monitorShape(raw: Raw): MonitorShape {
  const type = str(raw.type);
  return {
    type,
    delay: num(raw.delay, 0),
    timeout: num(raw.timeout, 0),
    max_retries: num(raw.max_retries, 0),
    max_retries_down: num(raw.max_retries_down, 3),
    ...(httpMonitor(type) ? { url_path: str(raw.url_path), expected_codes: str(raw.expected_codes), http_method: str(raw.http_method) } : {}),
  };
}

export function memberShape(raw: Raw): MemberShape {
  const subnet = typeof raw.subnet_id === 'string' ? raw.subnet_id : null;
  return {
    name: str(raw.name),
    address: canonicalIp(str(raw.address)),
    protocol_port: num(raw.protocol_port, 0),
    weight: num(raw.weight, 1),
    subnet_id: subnet,
  };
}

type Status = { id: string; provisioning_status: string; operating_status: string; tags: string[] };
const statusOf = (raw: Raw): Status => ({
  id: str(raw.id),
  provisioning_status: str(raw.provisioning_status),
  operating_status: str(raw.operating_status),
  tags: Array.isArray(raw.tags) ? (raw.tags as unknown[]).filter((t): t is string => typeof t === 'string') : [],
});

/** Ours: carries our owner tag and the load balancer's ref. */
function ours(raw: Raw, owner: string, ref: string): boolean {
  const m = markerFromTags(raw.tags);
  return m?.owner === owner && m.ref === ref;
}

/** Where the children are read: a project's scope and filter, or the agent's admin scope across projects. */
export interface TreeScope {
  api: ServiceClient;
  owner: string;
  /** Undefined: every project (admin scope). */
  projectId?: string;
  /** Every child, whoever made it (export, and adoption, which takes over the load balancer's whole tree); default: ours only. */
  everything?: boolean;
}

export function treeScope(ctx: AdapterContext): TreeScope {
  return { api: octavia(ctx), owner: ctx.owner, projectId: ctx.projectId };
}

/**
 * The children of ours of each load balancer in `lbs` (id → ref): one list
 * per child type, filtered by our owner tag, plus one member list per pool
 * (Octavia lists members only under their pool). Nothing is read when there
 * is no load balancer.
 */
export async function readTrees(scope: TreeScope, lbs: ReadonlyMap<string, string>): Promise<Map<string, ObservedListener[]>> {
  const out = new Map<string, ObservedListener[]>([...lbs.keys()].map((id) => [id, []]));
  if (lbs.size === 0) return out;
  const { api, owner } = scope;
  const query = { project_id: scope.projectId, tags: scope.everything ? undefined : ownerTag(owner) };
  const mine = (raw: Raw, lb: string): boolean => scope.everything === true || ours(raw, owner, lbs.get(lb)!);
  const [listeners, pools, monitors] = await Promise.all([
    api.list<Raw>('/lbaas/listeners', 'listeners', query),
    api.list<Raw>('/lbaas/pools', 'pools', query),
    api.list<Raw>('/lbaas/healthmonitors', 'healthmonitors', query),
  ]);
  const lbOf = (raw: Raw): string | undefined => {
    const id = (raw.loadbalancers as { id?: string }[] | undefined)?.[0]?.id;
    return id !== undefined && lbs.has(id) && mine(raw, id) ? id : undefined;
  };
  const poolById = new Map(pools.filter((p) => lbOf(p)).map((p) => [str(p.id), p]));
  const monitorById = new Map(
    monitors.filter((m) => (m.pools as { id?: string }[] | undefined)?.some((p) => poolById.has(str(p.id)))).map((m) => [str(m.id), m]),
  );
  const members = new Map<string, Raw[]>();
  await Promise.all(
    [...poolById.keys()].map(async (id) => {
      const lb = lbOf(poolById.get(id)!)!;
      members.set(
        id,
        (await api.list<Raw>(`/lbaas/pools/${id}/members`, 'members', { tags: scope.everything ? undefined : ownerTag(owner) })).filter((m) => mine(m, lb)),
      );
    }),
  );
  for (const l of listeners) {
    const lb = lbOf(l);
    if (!lb) continue;
    const pool = poolById.get(str(l.default_pool_id));
    const monitor = pool ? monitorById.get(str(pool.healthmonitor_id)) : undefined;
    out.get(lb)!.push({
      ...statusOf(l),
      shape: { name: str(l.name), protocol: str(l.protocol), protocol_port: num(l.protocol_port, 0), connection_limit: num(l.connection_limit, -1) },
      pool: pool
        ? {
            ...statusOf(pool),
            shape: { protocol: str(pool.protocol), lb_algorithm: str(pool.lb_algorithm) },
            members: (members.get(str(pool.id)) ?? []).map((m) => ({ ...statusOf(m), shape: memberShape(m) })),
            healthmonitor: monitor ? { ...statusOf(monitor), shape: monitorShape(monitor) } : null,
          }
        : null,
    });
  }
  return out;
}

/**
 * Until the load balancer takes a change: Octavia refuses one while any of
 * its objects is PENDING_*. Wait mode polls; requeue mode looks once and
 * may answer waiting, so no run is held while Octavia's worker works.
 */
export async function mutable(ctx: AdapterContext, id: string): Promise<Looked<Raw>> {
  return lookAgain<Raw>(ctx, {
    what: `LoadBalancer ${id}`,
    timeoutMs: 600_000,
    maxDelayMs: 2_000,
    look: async () => {
      const res = await octavia(ctx).find<{ loadbalancer: Raw }>(`/lbaas/loadbalancers/${id}`);
      if (!res)
        throw new KupenstackError('loadbalancer.gone', `Octavia load balancer ${id} disappeared while KupenStack was changing it; the next run makes it again`);
      const status = str(res.loadbalancer.provisioning_status);
      return status.startsWith('PENDING_') ? { why: `provisioning status ${status}` } : { done: res.loadbalancer };
    },
    onTimeout: (why) =>
      new KupenstackError('loadbalancer.timeout', `Octavia load balancer ${id} did not leave its pending state (${why}) in 10 minutes; check octavia-worker`),
  });
}

/**
 * One Octavia write. A 409 "immutable" (someone else's change made it PENDING
 * after we looked) is a wait, not an error: requeue mode looks again later.
 */
export async function perform(ctx: AdapterContext, lbId: string, step: Step, marker: Pick<Marker, 'owner' | 'ref'>): Promise<void> {
  const api = octavia(ctx);
  const tags = childTags(marker);
  try {
    if (step.op === 'delete') {
      const path =
        step.what === 'member'
          ? `/lbaas/pools/${step.poolId}/members/${step.id}`
          : `/lbaas/${step.what === 'healthmonitor' ? 'healthmonitors' : `${step.what}s`}/${step.id}`;
      await api.remove(path);
      return;
    }
    if (step.op === 'update') {
      const path =
        step.what === 'member'
          ? `/lbaas/pools/${step.poolId}/members/${step.id}`
          : `/lbaas/${step.what === 'healthmonitor' ? 'healthmonitors' : `${step.what}s`}/${step.id}`;
      await api.put(path, { [step.what]: step.body });
      return;
    }
    switch (step.what) {
      case 'listener':
        await api.post('/lbaas/listeners', { listener: { ...listenerBody(step.listener), loadbalancer_id: lbId, tags } });
        return;
      case 'pool':
        await api.post('/lbaas/pools', {
          pool: { name: step.listener, protocol: step.pool.protocol, lb_algorithm: step.pool.lb_algorithm, listener_id: step.listenerId, tags },
        });
        return;
      case 'healthmonitor':
        await api.post('/lbaas/healthmonitors', { healthmonitor: { ...step.monitor, name: step.listener, pool_id: step.poolId, tags } });
        return;
      case 'member':
        await api.post(`/lbaas/pools/${step.poolId}/members`, { member: memberBody(step.member, tags) });
        return;
    }
  } catch (err) {
    // Someone else's change made it PENDING after we looked (or a child of ours is still pending): a wait, not an error.
    if (err instanceof OpenStackError && err.status === 409 && /immutable/i.test(err.detail)) throw new Busy(err);
    throw err;
  }
}

/** Octavia refused a write because an object is PENDING (wait mode: the caller waits and looks again). */
export class Busy extends KupenstackError {
  constructor(cause: OpenStackError) {
    super('loadbalancer.busy', `Octavia is busy with another change: ${cause.detail}`, { cause });
  }
}

/**
 * perform(), with Octavia's "immutable" refusals waited out: polled in wait
 * mode (an error naming the refusal after 5 minutes), waiting in requeue mode.
 */
export async function performPatiently(ctx: AdapterContext, lbId: string, step: Step, marker: Pick<Marker, 'owner' | 'ref'>): Promise<Looked<true>> {
  return lookAgain<true>(ctx, {
    what: `LoadBalancer ${lbId}`,
    timeoutMs: 300_000,
    maxDelayMs: 2_000,
    look: async () => {
      try {
        await perform(ctx, lbId, step, marker);
        return { done: true };
      } catch (err) {
        if (err instanceof Busy) return { why: err.message };
        throw err;
      }
    },
    onTimeout: (why) =>
      new KupenstackError(
        'loadbalancer.busy',
        `Octavia refused a change of load balancer ${lbId} for 5 minutes (${why}); look for an object of it stuck in PENDING_* (openstack loadbalancer status show ${lbId})`,
      ),
  });
}

export function listenerBody(l: ListenerShape): Raw {
  return { name: l.name, protocol: l.protocol, protocol_port: l.protocol_port, connection_limit: l.connection_limit };
}

export function memberBody(m: MemberShape, tags: string[]): Raw {
  return { name: m.name, address: m.address, protocol_port: m.protocol_port, weight: m.weight, ...(m.subnet_id ? { subnet_id: m.subnet_id } : {}), tags };
}
