import type * as k8s from '@kubernetes/client-node';
import { SyncStatusBase, type SyncStatus } from '../../sync/status.ts';
import { clusterSyncKind, SyncResources, type SyncKind } from './sync-kind.ts';
import type { ObjectsHealth } from './health.ts';
import type { InventoryEntry } from './inventory.ts';
import type { SyncStatus as GeneratedSyncStatus } from '../../model/kinds.generated.ts';

/** Field manager of the Sync's status (the objects a Sync applies use kupenstack-sync-<name>). */
export const statusManager = 'kupenstack-controller';

/** What the Sync CR's status holds: the type generated from schemas/sync.schema.json. */
export type SyncResourceStatus = GeneratedSyncStatus;

/**
 * The in-cluster SyncStatusStore: the same conditions and history as the
 * standalone status file (agent/sync/status.ts, conditions.ts), kept in
 * the Sync resource's status subresource by server-side apply. What only
 * the cluster needs (inventory, heldRevision, observedGeneration) lives
 * beside it. `save` writes only while `acting` says this replica leads: a
 * run demoted in the middle (past its own leadership check, e.g. while
 * fetching) would otherwise write the status the new leader owns.
 */
export class KubeSyncStatusStore extends SyncStatusBase {
  readonly status: SyncStatus;
  inventory: InventoryEntry[];
  heldRevision?: string;
  /** With wait: the applied objects counted by their own conditions. */
  health?: ObjectsHealth;
  /** The reconcile request (annotation value) the last finished run answered. */
  lastHandledReconcileAt?: string;
  generation?: number;
  private readonly resources: SyncResources;
  private readonly acting: () => boolean;
  /** A NamespaceSync's namespace; undefined for a cluster Sync. */
  private readonly namespace?: string;

  constructor(
    custom: k8s.CustomObjectsApi,
    acting: () => boolean,
    name: string,
    source: string,
    suspended: boolean,
    saved: SyncResourceStatus | undefined,
    where: { kind: SyncKind; namespace?: string } = { kind: clusterSyncKind },
  ) {
    super();
    this.resources = new SyncResources(custom, where.kind);
    this.namespace = where.namespace;
    this.acting = acting;
    this.status = { name, source, suspended, conditions: [], history: [] };
    this.inventory = [];
    this.reload(saved);
  }

  /** Takes the resource's status as saved (a replica that becomes leader continues from the last leader's inventory, not from what it saw at start). */
  reload(saved: SyncResourceStatus | undefined): void {
    const s = saved ?? {};
    const { name, source, suspended } = this.status;
    for (const key of Object.keys(this.status)) delete (this.status as unknown as Record<string, unknown>)[key];
    Object.assign(this.status, {
      name,
      source,
      suspended,
      conditions: (s.conditions ?? []).map((c) => ({ ...c, lastTransitionTime: asTime(c.lastTransitionTime) })),
      history: (s.history ?? []).map((h) => ({
        revision: h.revision,
        trigger: 'startup',
        startedAt: asTime(h.startedAt),
        duration: h.duration ?? '0s',
        durationMs: 0,
        result: h.result,
        ...(h.message ? { message: h.message } : {}),
        ...(h.counts ? { counts: h.counts } : {}),
      })),
    });
    for (const key of ['lastFetchedRevision', 'lastAppliedRevision', 'lastAttemptedRevision', 'rejectedRevision'] as const)
      if (s[key]) this.status[key] = s[key];
    if (s.diagnostics?.length) this.status.rejectedBecause = s.diagnostics;
    if (s.lastSyncTime) this.status.lastSyncTime = asTime(s.lastSyncTime);
    this.inventory = s.inventory ?? [];
    this.heldRevision = s.heldRevision;
    this.lastHandledReconcileAt = s.lastHandledReconcileAt;
    this.health = s.health
      ? { ready: s.health.ready ?? 0, reconciling: s.health.reconciling ?? 0, stalled: s.health.stalled ?? 0, failing: s.health.failing ?? [] }
      : undefined;
    if (!this.get('Ready')) this.condition('Ready', 'Unknown', 'Pending', 'waiting for the first run');
  }

  body(): SyncResourceStatus {
    const s = this.status;
    const out: SyncResourceStatus = { conditions: s.conditions, inventory: this.inventory };
    if (this.generation !== undefined) out.observedGeneration = this.generation;
    for (const key of ['lastSyncTime', 'lastFetchedRevision', 'lastAppliedRevision', 'lastAttemptedRevision', 'rejectedRevision'] as const)
      if (s[key]) out[key] = s[key];
    if (s.rejectedBecause?.length) out.diagnostics = s.rejectedBecause.slice(0, 20).map((l) => l.slice(0, 4096));
    if (this.heldRevision) out.heldRevision = this.heldRevision;
    if (this.health) out.health = this.health;
    if (this.lastHandledReconcileAt) out.lastHandledReconcileAt = this.lastHandledReconcileAt;
    out.history = s.history.map((h) => ({
      revision: h.revision,
      startedAt: h.startedAt,
      duration: h.duration,
      result: h.result,
      ...(h.message ? { message: h.message } : {}),
      ...(h.counts ? { counts: h.counts } : {}),
    }));
    return out;
  }

  /** Server-side apply of the whole status: a field left out (a cleared rejectedRevision) is removed. */
  async save(): Promise<void> {
    if (!this.acting()) return;
    const ref = this.namespace ? { namespace: this.namespace, name: this.status.name } : { name: this.status.name };
    await this.resources.applyStatus(ref, this.body(), statusManager);
  }
}

/** client-node hands date-time fields back as Date objects. */
function asTime(v: unknown): string {
  return v instanceof Date ? v.toISOString() : String(v);
}
