import * as k8s from '@kubernetes/client-node';
import { KupenstackError } from '../../errors.ts';
import { mergePatch } from '../../kube/client.ts';
import { kubeApiError } from '../../kube/errors.ts';
import type { SyncSpec } from '../../model/kinds.generated.ts';
import { group, version } from '../../schema/registry.ts';
import type { SyncResourceStatus } from '../../controller/syncs/status-store.ts';
import { requestedAtAnnotation } from '../../controller/syncs/sync-loop.ts';

/**
 * What `kupenstack get syncs`, `reconcile sync` and `suspend|resume sync` do
 * against the cluster (Flux's `flux get kustomizations`, `flux reconcile`,
 * `flux suspend|resume`), as plain
 * functions over a KubeConfig: the CLI files only parse flags and print.
 */

interface SyncObject {
  metadata: { name: string; creationTimestamp?: Date | string; generation?: number; annotations?: Record<string, string> };
  spec: SyncSpec;
  status?: SyncResourceStatus;
}

export interface SyncRow {
  name: string;
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
    super('sync.not-found', `Sync ${name} does not exist in this cluster; list them with kupenstack get syncs`, { cause });
  }
}

export function rowOf(s: SyncObject, now = Date.now()): SyncRow {
  const ready = s.status?.conditions?.find((c) => c.type === 'Ready');
  const h = s.status?.health;
  const created = s.metadata.creationTimestamp ? new Date(s.metadata.creationTimestamp).getTime() : now;
  return {
    name: s.metadata.name,
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

export async function listSyncs(kc: k8s.KubeConfig, selector?: string): Promise<SyncObject[]> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    const list = (await api.listClusterCustomObject({ group, version, plural: 'syncs', ...(selector ? { labelSelector: selector } : {}) })) as {
      items: SyncObject[];
    };
    return list.items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  } catch (err) {
    throw kubeApiError('list Syncs', err);
  }
}

async function getSync(kc: k8s.KubeConfig, name: string): Promise<SyncObject> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    return (await api.getClusterCustomObject({ group, version, plural: 'syncs', name })) as SyncObject;
  } catch (err) {
    if ((err as { code?: number }).code === 404) throw new SyncNotFoundError(name, err);
    throw kubeApiError(`read Sync ${name}`, err);
  }
}

/**
 * `kupenstack suspend|resume sync` (Flux's `flux suspend|resume`): sets
 * spec.suspend with a merge patch; the controller shows Suspended, or runs
 * the Sync at once on resume. Returns whether the spec changed.
 */
export async function setSuspended(kc: k8s.KubeConfig, name: string, suspend: boolean): Promise<boolean> {
  const before = await getSync(kc, name);
  if ((before.spec.suspend ?? false) === suspend) return false;
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    await api.patchClusterCustomObject({ group, version, plural: 'syncs', name, body: { spec: { suspend } } }, mergePatch);
  } catch (err) {
    throw kubeApiError(`${suspend ? 'suspend' : 'resume'} Sync ${name}`, err);
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
  name: string,
  opts: { timeoutMs: number; pollMs?: number; now?: () => Date },
): Promise<ReconcileResult> {
  const before = await getSync(kc, name);
  if (before.spec.suspend)
    throw new KupenstackError('sync.suspended', `Sync ${name} is suspended: nothing runs until kupenstack resume sync ${name} (or spec.suspend: false)`);
  const requestedAt = (opts.now?.() ?? new Date()).toISOString();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    await api.patchClusterCustomObject(
      { group, version, plural: 'syncs', name, body: { metadata: { annotations: { [requestedAtAnnotation]: requestedAt } } } },
      mergePatch,
    );
  } catch (err) {
    throw kubeApiError(`annotate Sync ${name}`, err);
  }
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const s = await getSync(kc, name);
    if (s.status?.lastHandledReconcileAt === requestedAt) {
      const row = rowOf(s);
      return { row, ok: row.ready === 'True' };
    }
    if (Date.now() >= deadline)
      throw new KupenstackError(
        'sync.reconcile-timeout',
        `Sync ${name}: no run answered the request of ${requestedAt} within ${Math.round(opts.timeoutMs / 1000)}s; ` +
          `is the controller running (and watching this Sync)? Ready now: ${rowOf(s).message || 'unknown'}`,
      );
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
  }
}
