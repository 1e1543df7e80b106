import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { SyncConfig } from '../../sync/settings.ts';
import type { Notifier } from '../../notify/notifier.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { AgentMetrics } from '../../telemetry/metrics.ts';
import { repoPath } from '../../sync/repo-path.ts';
import type { Trigger } from '../../sync/scheduler.ts';
import { progressing, reasons } from '../../sync/conditions.ts';
import { SyncRun, type LoadedRevision, type SyncApplier } from '../../sync/sync-run.ts';
import type { ObjectsLook, SyncOutcome } from '../../sync/outcome.ts';
import type { CrossSyncLinks } from '../../sync/cross-sync.ts';
import type { SchemaRegistry } from '../../schema/registry.ts';
import type { Source } from '../../source/source.ts';
import { applyOne, desiredObjects, difference, dryRunApply, pruneObjects, type DesiredObject } from './cluster-apply.ts';
import { lookAgainMs, readHealth, type ObjectsHealth } from './health.ts';
import { describeEntry, fieldManagerOf } from './inventory.ts';
import type { KubeSyncStatusStore } from './status-store.ts';

/** The annotation that confirms deletions the mass-delete guard held: its value is the held revision. */
const allowMassDeleteAnnotation = 'kupenstack.io/allow-mass-delete';

export interface SyncWorkerDeps {
  sync: SyncConfig;
  /** Percentage of the inventory a revision may delete before it is held (spec.massDeleteThreshold). */
  massDeleteThreshold: number;
  source: Source;
  store: KubeSyncStatusStore;
  /** Custom objects as the Sync's ServiceAccount (impersonated): every write of the revision goes through it. */
  writer: k8s.CustomObjectsApi;
  registry: SchemaRegistry;
  metrics: AgentMetrics;
  log: Logger;
  /** Only the leader writes (leader election); asked before each batch of writes. */
  acting: () => boolean;
  /** A Kubernetes Event on the Sync resource. */
  event: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** The annotations of the Sync resource now (the mass-delete confirmation). */
  annotations: () => Record<string, string>;
  /** The Sync's `notify:` targets. */
  notifier?: Notifier;
  /** `wait` with objects not Ready yet: run again (trigger 'health') after this delay; the run ends meanwhile (the Scheduler's lookAgain). */
  lookAgain: (afterMs: number) => void;
  /** References across Syncs (dependsOn), from the Sync loop's watch cache. */
  crossSync?: CrossSyncLinks;
  /** The run's name in metrics, logs and notifications (default the Sync's name; a NamespaceSync's is `namespace/name`). */
  runName?: string;
  /** The field manager of the applies (default kupenstack-sync-<name>; a NamespaceSync's names its namespace too). */
  fieldManager?: string;
  /** Refusals of the whole revision before anything is sent (a NamespaceSync: an object outside its namespace, over its namespace's limit). */
  refuse?: (objects: DesiredObject[]) => string[];
}

/**
 * One Sync resource's apply side in the cluster (the Sync loop, Flux's
 * kustomize-controller: writes go out as the Sync's ServiceAccount, so RBAC
 * decides what its repository may create), under the shared Sync run (agent/sync/sync-run.ts):
 * a server-side dry-run of every object as the Sync's ServiceAccount, then
 * the real apply, prune of what left Git, and the status. A revision
 * refused at any step before the real apply writes nothing. `wait` looks at
 * the applied objects once per run and asks to run again (progress by
 * requeue), so no run waits for the resource loop.
 */
export class SyncWorker implements SyncApplier {
  private readonly d: SyncWorkerDeps;
  private readonly sync: SyncRun;
  private lastGood?: { revision: string; objects: DesiredObject[] };
  /** The first look at the revision being waited for: its deadline survives a webhook's or drift's run in between. */
  private since?: { revision: string; at: number };

  constructor(deps: SyncWorkerDeps) {
    this.d = deps;
    const { sync, source, store, registry, metrics, log, notifier, lookAgain, crossSync } = deps;
    const notify = { ...(notifier ? { notify: notifier.notify.bind(notifier) } : {}), ...(crossSync ? { crossSync } : {}) };
    this.sync = new SyncRun(
      { name: deps.runName ?? sync.name, path: sync.path, intervalMs: sync.intervalMs, source, store, registry, metrics, log, lookAgain, ...notify },
      this,
    );
  }

  get name(): string {
    return this.d.sync.name;
  }

  run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    return this.sync.run(trigger, signal);
  }

  acting(): boolean {
    return this.d.acting();
  }

  upToDate(revision: string): boolean {
    return this.lastGood?.revision === revision && !this.confirmsHeld();
  }

  /** The checkout is read once, right away: the objects are kept in memory. */
  keep(_revision: string, dir: string): Promise<string> {
    return Promise.resolve(dir);
  }

  async applyLastGood(trigger: Trigger, signal: AbortSignal): Promise<SyncOutcome | undefined> {
    return this.lastGood ? this.applyObjects(this.lastGood.revision, this.lastGood.objects, trigger, signal, true) : undefined;
  }

  apply(rev: LoadedRevision, trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<SyncOutcome> {
    const fileOf = (file: string): string => repoPath(join(rev.dir, file), rev.dir, this.d.sync.path);
    const objects = desiredObjects(rev.validated.manifests, this.d.registry, this.d.sync.name, (m) => fileOf(m.source.file));
    // The applied revision again on a timed run: drift correction (a kubectl edit is put back).
    return this.applyObjects(rev.revision, objects, trigger, signal, drift);
  }

  /** A rejection or deletions held, as an Event on the Sync. */
  said(o: SyncOutcome): void {
    if (o.result === 'Rejected') {
      const lines = o.refusals;
      // Held for a dependent's reference, or invalid: as the Ready condition just set says.
      const held = this.d.store.get('Ready')?.reason === reasons.referencedByDependent;
      this.d.event(
        'Warning',
        held ? reasons.referencedByDependent : reasons.validationFailed,
        `revision ${o.revision} rejected, nothing applied: ${lines[0] ?? ''}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}`,
      );
    } else if (o.result === 'Held') this.d.event('Warning', reasons.deletionHeld, `${o.held} deletions of ${o.revision} held by the mass-delete guard`);
  }

  /** Dry-run, apply, prune: what it came to (deletions held count as applied). */
  private async applyObjects(revision: string, objects: DesiredObject[], trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<SyncOutcome> {
    const st = this.d.store;
    const manager = this.d.fieldManager ?? fieldManagerOf(this.d.sync.name);
    const refusals = this.d.refuse?.(objects) ?? [];
    if (refusals.length > 0) return { result: 'Rejected', revision, refusals };
    const failed = (message: string, counts?: Record<string, number>, written: DesiredObject[] = []): SyncOutcome =>
      this.failed(revision, drift, message, counts, written);
    progressing(st, `${drift ? 'correcting drift with' : 'applying'} ${revision}`);
    await st.save();
    this.d.log.info({ revision, trigger, drift, objects: objects.length }, drift ? 'correcting drift' : 'applying revision');

    const dry = await dryRunApply(this.d.writer, objects, manager, signal);
    if (dry.transient) return failed(`the API server could not check ${revision}: ${dry.transient.message}`);
    if (dry.refused.length > 0) return { result: 'Rejected', revision, refusals: dry.refused };
    if (!this.d.acting()) return { result: 'Stopped', revision };

    const counts = { applied: 0, deleted: 0, held: 0, failed: 0 };
    for (const o of objects) {
      if (signal.aborted || !this.d.acting()) return failed('interrupted before every object was applied', counts, objects.slice(0, counts.applied));
      try {
        await applyOne(this.d.writer, o, manager, false);
        counts.applied++;
      } catch (cause) {
        counts.failed++;
        // What was written stays in the inventory, so a later revision still prunes it.
        return failed(`${o.file}: ${describeEntry(o.entry)}: ${(cause as Error).message}`, counts, objects.slice(0, counts.applied));
      }
    }

    // Prune: what the last inventory had and this revision does not declare, behind the mass-delete guard.
    const next = objects.map((o) => o.entry);
    const gone = this.d.sync.prune ? difference(st.inventory, next) : [];
    const total = st.inventory.length;
    const guarded = gone.length > 0 && total > 0 && (gone.length * 100) / total > this.d.massDeleteThreshold && !this.confirmsHeld(revision);
    let kept = gone;
    if (!guarded && gone.length > 0) {
      if (!this.d.acting()) return { result: 'Stopped', revision };
      const pruned = await pruneObjects(this.d.writer, gone, this.d.registry, this.d.sync.name);
      for (const e of pruned.deleted) this.d.log.info({ revision, object: describeEntry(e) }, 'pruned');
      counts.deleted = pruned.deleted.length;
      kept = pruned.failed.map((f) => f.entry);
      if (pruned.failed.length > 0) {
        st.inventory = [...next, ...kept];
        return failed(`prune: ${pruned.failed.map((f) => f.error.message).join('; ')}`, counts);
      }
    } else counts.held = gone.length;
    st.inventory = [...next, ...(guarded ? kept : [])];
    this.lastGood = { revision, objects };
    st.heldRevision = guarded ? revision : undefined;
    if (guarded) {
      // In the cluster the confirmation is an annotation on the Sync, not a CLI flag.
      const which = `${gone.length} deletions held by the mass-delete guard (massDeleteThreshold ${this.d.massDeleteThreshold}%): ${gone.map(describeEntry).slice(0, 5).join(', ')}`;
      const confirm = `confirm with kubectl annotate sync ${this.d.sync.name} ${allowMassDeleteAnnotation}=${revision}`;
      return { result: 'Held', revision, drift, counts, held: gone.length, readyMessage: `${revision} applied except ${which}; ${confirm}` };
    }
    if (!this.d.sync.wait) st.health = undefined;
    return { result: 'Succeeded', revision, drift, counts, summary: `${counts.applied} applied, ${counts.deleted} deleted`, wait: this.d.sync.wait === true };
  }

  /**
   * `wait: true`, one look: all Ready; one Stalled, or still Reconciling after `timeout` from the first look: not Ready
   * (the run retries with backoff); else waiting, and the Sync runs again soon.
   */
  async look(revision: string, afterApply: boolean): Promise<ObjectsLook> {
    const st = this.d.store;
    const objects = this.lastGood?.revision === revision ? this.lastGood.objects : [];
    // The same revision applied again (a webhook, drift) keeps the deadline of its first look.
    if (afterApply) this.since = { revision, at: this.since?.revision === revision ? this.since.at : Date.now() };
    // Kept only while the Sync waits: a look that ends the wait (either way) starts the next one's clock afresh.
    const since = this.since;
    this.since = undefined;
    let h: ObjectsHealth;
    try {
      h = await readHealth(this.d.writer, objects);
    } catch (cause) {
      return { unreadable: (cause as Error).message };
    }
    st.health = h;
    if (h.ready === objects.length) return { ready: h.ready };
    const waited = Date.now() - (since?.at ?? Date.now());
    if (h.stalled === 0 && waited < this.d.sync.timeoutMs) {
      this.since = since;
      const first = h.failing[0] ? `; first: ${h.failing[0]}` : '';
      return {
        waiting: { reason: `${revision} applied; ${h.ready}/${objects.length} objects Ready, waiting for the rest${first}`, afterMs: lookAgainMs(waited) },
        objects: objects.length,
      };
    }
    const counts = `${h.ready}/${objects.length} objects Ready, ${h.stalled} Stalled, ${h.reconciling} Reconciling`;
    this.d.event('Warning', reasons.healthCheckFailed, `${revision}: ${counts}; first: ${h.failing[0] ?? ''}`);
    return { notReady: { counts, failing: h.failing, stalled: h.stalled > 0 } };
  }

  /** The Sync carries the confirmation for the held revision (or for `revision`). */
  private confirmsHeld(revision?: string): boolean {
    const want = revision ?? this.d.store.heldRevision;
    return want !== undefined && this.d.annotations()[allowMassDeleteAnnotation] === want;
  }

  /** A failed apply: what it wrote stays in the inventory (a later revision prunes it). */
  private failed(revision: string, drift: boolean, message: string, counts?: Record<string, number>, written: DesiredObject[] = []): SyncOutcome {
    const st = this.d.store;
    const known = new Set(st.inventory.map((e) => describeEntry(e)));
    st.inventory = [...st.inventory, ...written.map((o) => o.entry).filter((e) => !known.has(describeEntry(e)))];
    return { result: 'Failed', revision, drift, reason: reasons.applyFailed, message, ...(counts ? { counts } : {}) };
  }
}
