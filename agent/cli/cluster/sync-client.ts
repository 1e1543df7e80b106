import * as k8s from '@kubernetes/client-node';
import { KupenstackError } from '../../errors.ts';
import { kubeApiError } from '../../kube/errors.ts';
import type { SyncSpec } from '../../model/kinds.generated.ts';
import type { SyncResourceStatus } from '../../controller/syncs/status-store.ts';
import { requestedAtAnnotation } from '../../controller/syncs/sync-loop.ts';
import { clusterSyncKind, namespaceSyncKind, SyncResources } from '../../controller/syncs/sync-kind.ts';

/**
 * What `kupenstack get syncs`, `reconcile sync` and `suspend|resume sync` do
 * against the cluster (Flux's `flux get kustomizations`, `flux reconcile`,
 * `flux suspend|resume`), as plain
 * functions over a KubeConfig: the CLI files only parse flags and print.
 */

interface SyncObject {
  metadata: { name: string; namespace?: string; creationTimestamp?: Date | string; generation?: number; annotations?: Record<string, string> };
  spec: SyncSpec;
  status?: SyncResourceStatus;
}

export interface SyncRow {
  name: string;
  /** A NamespaceSync's namespace; absent for a cluster Sync. */
  namespace?: string;
  revision: string;
  suspended: boolean;
  ready: string;
  reason: string;
  message: string;
  age: string;
  /** With wait: objects Ready of those applied. */
  objects?: string;
  /** With wait: the counts kubectl's columns show (Objects Ready, Stalled). */
  readyObjects?: number;
  stalled?: number;
}

export class SyncNotFoundError extends KupenstackError {
  constructor(name: string, cause?: unknown) {
    super('sync.not-found', `${name} does not exist in this cluster; list them with kupenstack get syncs [-n NAMESPACE | -A]`, { cause });
  }
}

/** Which Sync a command names: a cluster Sync by name, or a tenant's NamespaceSync by namespace and name. */
export type SyncTarget = string | { namespace: string; name: string };

/** The target's resources, reference and words for messages (`Sync apps`, `NamespaceSync team-a/apps`). */
function targetOf(kc: k8s.KubeConfig, t: SyncTarget): { api: SyncResources; ref: { namespace?: string; name: string }; what: string; name: string } {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  if (typeof t === 'string') return { api: new SyncResources(custom, clusterSyncKind), ref: { name: t }, what: `Sync ${t}`, name: t };
  return { api: new SyncResources(custom, namespaceSyncKind), ref: t, what: `NamespaceSync ${t.namespace}/${t.name}`, name: t.name };
}

export function rowOf(s: SyncObject, now = Date.now()): SyncRow {
  const ready = s.status?.conditions?.find((c) => c.type === 'Ready');
  const h = s.status?.health;
  const created = s.metadata.creationTimestamp ? new Date(s.metadata.creationTimestamp).getTime() : now;
  return {
    name: s.metadata.name,
    ...(s.metadata.namespace ? { namespace: s.metadata.namespace } : {}),
    revision: s.status?.lastAppliedRevision ?? '',
    suspended: s.spec.suspend ?? false,
    ready: ready?.status ?? 'Unknown',
    reason: ready?.reason ?? '',
    message: ready?.message ?? '',
    age: age(now - created),
    ...(h
      ? { objects: `${h.ready ?? 0}/${(h.ready ?? 0) + (h.reconciling ?? 0) + (h.stalled ?? 0)}`, readyObjects: h.ready ?? 0, stalled: h.stalled ?? 0 }
      : {}),
  };
}

/** kubectl's age: the largest unit, then the next one for small values (5m30s, 3h10m, 12d). */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const hr = Math.floor(m / 60);
  if (hr < 48) return `${hr}h${m % 60 && hr < 8 ? `${m % 60}m` : ''}`;
  return `${Math.floor(hr / 24)}d`;
}

/**
 * The cluster's Syncs, then the NamespaceSyncs of `namespaces` (a namespace, `all` for every one, or none), each sorted by name.
 * A tenant may not list cluster Syncs: with NamespaceSyncs asked for, a Forbidden there leaves them out.
 */
export async function listSyncs(kc: k8s.KubeConfig, selector?: string, namespaces?: string): Promise<SyncObject[]> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const byName = (a: SyncObject, b: SyncObject): number =>
    `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ''}/${b.metadata.name}`);
  let cluster: SyncObject[] = [];
  try {
    cluster = ((await new SyncResources(custom, clusterSyncKind).list(selector)) as { items: SyncObject[] }).items.sort(byName);
  } catch (err) {
    if (namespaces === undefined || (err as { code?: number }).code !== 403) throw kubeApiError('list Syncs', err);
  }
  if (namespaces === undefined) return cluster;
  try {
    const at = { group: 'kupenstack.io', version: 'v1alpha1', plural: namespaceSyncKind.plural, ...(selector ? { labelSelector: selector } : {}) };
    const list = (
      namespaces === 'all' ? await custom.listClusterCustomObject(at) : await custom.listNamespacedCustomObject({ ...at, namespace: namespaces })
    ) as {
      items: SyncObject[];
    };
    return [...cluster, ...list.items.sort(byName)];
  } catch (err) {
    // A cluster without the NamespaceSync CRD (an older install) has none.
    if ((err as { code?: number }).code === 404) return cluster;
    throw kubeApiError('list NamespaceSyncs', err);
  }
}

async function getSync(kc: k8s.KubeConfig, target: SyncTarget): Promise<SyncObject> {
  const { api, ref, what } = targetOf(kc, target);
  try {
    return (await api.get(ref)) as SyncObject;
  } catch (err) {
    if ((err as { code?: number }).code === 404) throw new SyncNotFoundError(what, err);
    throw kubeApiError(`read ${what}`, err);
  }
}

/**
 * `kupenstack suspend|resume sync` (Flux's `flux suspend|resume`): sets
 * spec.suspend with a merge patch; the controller shows Suspended, or runs
 * the Sync at once on resume. Returns whether the spec changed.
 */
export async function setSuspended(kc: k8s.KubeConfig, target: SyncTarget, suspend: boolean): Promise<boolean> {
  const before = await getSync(kc, target);
  if ((before.spec.suspend ?? false) === suspend) return false;
  const { api, ref, what } = targetOf(kc, target);
  try {
    await api.patch(ref, { spec: { suspend } });
  } catch (err) {
    throw kubeApiError(`${suspend ? 'suspend' : 'resume'} ${what}`, err);
  }
  return true;
}

export interface ReconcileResult {
  row: SyncRow;
  ok: boolean;
}

/**
 * Asks the controller for a run now (the annotation a webhook also sets) and
 * waits until the status says a run answered this request; the Sync's Ready
 * then is the result. A suspended Sync is refused: nothing would run.
 */
export async function reconcileSync(
  kc: k8s.KubeConfig,
  target: SyncTarget,
  opts: { timeoutMs: number; pollMs?: number; now?: () => Date },
): Promise<ReconcileResult> {
  const { api, ref, what, name } = targetOf(kc, target);
  const before = await getSync(kc, target);
  const resume = typeof target === 'string' ? `sync ${name}` : `sync ${name} -n ${target.namespace}`;
  if (before.spec.suspend)
    throw new KupenstackError('sync.suspended', `${what} is suspended: nothing runs until kupenstack resume ${resume} (or spec.suspend: false)`);
  const requestedAt = (opts.now?.() ?? new Date()).toISOString();
  try {
    await api.patch(ref, { metadata: { annotations: { [requestedAtAnnotation]: requestedAt } } });
  } catch (err) {
    throw kubeApiError(`annotate ${what}`, err);
  }
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const s = await getSync(kc, target);
    if (s.status?.lastHandledReconcileAt === requestedAt) {
      const row = rowOf(s);
      return { row, ok: row.ready === 'True' };
    }
    if (Date.now() >= deadline)
      throw new KupenstackError(
        'sync.reconcile-timeout',
        `${what}: no run answered the request of ${requestedAt} within ${Math.round(opts.timeoutMs / 1000)}s; ` +
          `is the controller running (and watching this Sync)? Ready now: ${rowOf(s).message || 'unknown'}`,
      );
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
  }
}
