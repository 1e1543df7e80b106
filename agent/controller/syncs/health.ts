import type * as k8s from '@kubernetes/client-node';
import { group, version } from '../../schema/registry.ts';
import type { DesiredObject } from './cluster-apply.ts';
import { describeEntry } from './inventory.ts';

/**
 * `wait: true` (Flux's wait): the applied custom resources' own kstatus
 * conditions, which the resource loop sets from OpenStack, counted. An object
 * is Ready when its Ready condition is True for its current generation;
 * Stalled when its Stalled condition is True (a VM in ERROR that healing gave
 * up on, a refused spec); anything else is still Reconciling.
 */
export interface ObjectsHealth {
  ready: number;
  reconciling: number;
  stalled: number;
  /** The first objects that are not Ready, Stalled ones first: `Kind/ns/name: Reason: message`. */
  failing: string[];
}

interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

interface Observed {
  metadata?: { generation?: number };
  status?: { observedGeneration?: number; conditions?: Cond[] };
}

const maxNamed = 10;

/** One object's verdict from what the API server returned (undefined: not found). */
export function objectHealth(o: Observed | undefined): { state: 'ready' | 'reconciling' | 'stalled'; reason: string; message: string } {
  if (!o) return { state: 'reconciling', reason: 'NotFound', message: 'not in the API server' };
  const conds = o.status?.conditions ?? [];
  const generation = o.metadata?.generation;
  const stalled = conds.find((c) => c.type === 'Stalled' && c.status === 'True');
  if (stalled) return { state: 'stalled', reason: stalled.reason ?? 'Stalled', message: stalled.message ?? '' };
  const ready = conds.find((c) => c.type === 'Ready');
  const seen = ready?.observedGeneration ?? o.status?.observedGeneration;
  // A Ready for an older generation says nothing about the spec just applied.
  if (ready?.status === 'True' && (generation === undefined || seen === undefined || seen >= generation))
    return { state: 'ready', reason: ready.reason ?? 'Ready', message: ready.message ?? '' };
  return { state: 'reconciling', reason: ready?.reason ?? 'Pending', message: ready?.message ?? 'no status from the resource loop yet' };
}

export function summarize(objects: { name: string; observed: Observed | undefined }[]): ObjectsHealth {
  const out: ObjectsHealth = { ready: 0, reconciling: 0, stalled: 0, failing: [] };
  const stalled: string[] = [];
  const pending: string[] = [];
  for (const o of objects) {
    const h = objectHealth(o.observed);
    out[h.state]++;
    const line = `${o.name}: ${h.reason}${h.message ? `: ${h.message}` : ''}`.slice(0, 1024);
    if (h.state === 'stalled') stalled.push(line);
    else if (h.state === 'reconciling') pending.push(line);
  }
  out.failing = [...stalled, ...pending].slice(0, maxNamed);
  return out;
}

/** Reads every applied object as the Sync's identity and counts them. */
export async function readHealth(api: k8s.CustomObjectsApi, objects: DesiredObject[]): Promise<ObjectsHealth> {
  const observed = await Promise.all(
    objects.map(async (o) => {
      const { namespace, name } = o.entry;
      try {
        const got: unknown = namespace
          ? await api.getNamespacedCustomObject({ group, version, plural: o.plural, namespace, name })
          : await api.getClusterCustomObject({ group, version, plural: o.plural, name });
        return { name: describeEntry(o.entry), observed: got as Observed };
      } catch (err) {
        if ((err as { code?: number }).code === 404) return { name: describeEntry(o.entry), observed: undefined };
        throw err;
      }
    }),
  );
  return summarize(observed);
}

/**
 * When `wait` looks at the objects again (progress by requeue: the Sync's run
 * ends meanwhile): after half the time waited so far, from 2 s up to 10 s, so
 * a quick rollout is seen quickly and a long one costs few looks.
 */
export const lookAgainMs = (waitedMs: number): number => Math.min(10_000, Math.max(2_000, Math.round(waitedMs / 2)));
