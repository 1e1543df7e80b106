import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { SyncConfig } from '../../sync/settings.ts';
import type { Notifier } from '../../notify/notifier.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { AgentMetrics } from '../../telemetry/metrics.ts';
import { repoPath } from '../../sync/repo-path.ts';
import type { Trigger } from '../../sync/scheduler.ts';
import { applyFailed, held, progressing, reasons, succeeded } from '../../sync/conditions.ts';
import { SyncRun, type LoadedRevision, type SyncApplier } from '../../sync/sync-run.ts';
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
}

/** A revision applied with `wait` whose objects are not all Ready yet: what the next look needs. */
interface Waiting {
  revision: string;
  objects: DesiredObject[];
  summary: string;
  /** The first look: `timeout` counts from here, not from each look. */
  since: number;
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
  /** Set by a run whose objects are not all Ready yet; each run starts without it. */
  private waiting?: Waiting;
  /** The first look at the revision being waited for: its deadline survives a webhook's or drift's run in between. */
  private since?: { revision: string; at: number };

  constructor(deps: SyncWorkerDeps) {
    this.d = deps;
    const { sync, source, store, registry, metrics, log, notifier } = deps;
    const notify = notifier ? { notify: notifier.notify.bind(notifier) } : {};
    this.sync = new SyncRun({ name: sync.name, path: sync.path, intervalMs: sync.intervalMs, source, store, registry, metrics, log, ...notify }, this);
  }

  get name(): string {
    return this.d.sync.name;
  }

  run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    // A look again of `wait`: only the objects are read (no fetch, no apply), unless the revision moved on meanwhile.
    const waiting = this.waiting;
    this.waiting = undefined;
    if (trigger === 'health' && waiting && this.d.acting()) return this.lookAgain(waiting, trigger);
    return this.sync.run(trigger, signal);
  }

  /** Whether the run that just ended asked to look again (its Reconciling stays True). */
  lookingAgain(): boolean {
    return this.waiting !== undefined;
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

  async applyLastGood(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    return this.lastGood ? this.applyObjects(this.lastGood.revision, this.lastGood.objects, trigger, signal, true) : false;
  }

  apply(rev: LoadedRevision, trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<boolean> {
    const fileOf = (file: string): string => repoPath(join(rev.dir, file), rev.dir, this.d.sync.path);
    const objects = desiredObjects(rev.validated.manifests, this.d.registry, this.d.sync.name, (m) => fileOf(m.source.file));
    // The applied revision again on a timed run: drift correction (a kubectl edit is put back).
    return this.applyObjects(rev.revision, objects, trigger, signal, drift);
  }

  refused(revision: string, lines: string[]): void {
    this.d.event('Warning', reasons.validationFailed, `revision ${revision} rejected, nothing applied: ${lines[0] ?? ''}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}`);
  }

  /** Dry-run, apply, prune; true when the revision is applied (deletions held count as applied). */
  private async applyObjects(revision: string, objects: DesiredObject[], trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<boolean> {
    const st = this.d.store;
    const started = Date.now();
    const manager = fieldManagerOf(this.d.sync.name);
    progressing(st, `${drift ? 'correcting drift with' : 'applying'} ${revision}`);
    await st.save();
    this.d.log.info({ revision, trigger, drift, objects: objects.length }, drift ? 'correcting drift' : 'applying revision');

    const dry = await dryRunApply(this.d.writer, objects, manager, signal);
    if (dry.transient) return this.failed(started, revision, trigger, drift, `the API server could not check ${revision}: ${dry.transient.message}`);
    if (dry.refused.length > 0) {
      this.sync.reject(revision, dry.refused, started, trigger);
      return false;
    }
    if (!this.d.acting()) return false;

    const counts = { applied: 0, deleted: 0, held: 0, failed: 0 };
    for (const o of objects) {
      if (signal.aborted || !this.d.acting()) return this.failed(started, revision, trigger, drift, 'interrupted before every object was applied', counts, objects.slice(0, counts.applied));
      try {
        await applyOne(this.d.writer, o, manager, false);
        counts.applied++;
      } catch (cause) {
        counts.failed++;
        // What was written stays in the inventory, so a later revision still prunes it.
        return this.failed(started, revision, trigger, drift, `${o.file}: ${describeEntry(o.entry)}: ${(cause as Error).message}`, counts, objects.slice(0, counts.applied));
      }
    }

    // Prune: what the last inventory had and this revision does not declare, behind the mass-delete guard.
    const next = objects.map((o) => o.entry);
    const gone = this.d.sync.prune ? difference(st.inventory, next) : [];
    const total = st.inventory.length;
    const guarded = gone.length > 0 && total > 0 && (gone.length * 100) / total > this.d.massDeleteThreshold && !this.confirmsHeld(revision);
    let kept = gone;
    if (!guarded && gone.length > 0) {
      if (!this.d.acting()) return false;
      const pruned = await pruneObjects(this.d.writer, gone, this.d.registry, this.d.sync.name);
      for (const e of pruned.deleted) this.d.log.info({ revision, object: describeEntry(e) }, 'pruned');
      counts.deleted = pruned.deleted.length;
      kept = pruned.failed.map((f) => f.entry);
      if (pruned.failed.length > 0) {
        st.inventory = [...next, ...kept];
        return this.failed(started, revision, trigger, drift, `prune: ${pruned.failed.map((f) => f.error.message).join('; ')}`, counts);
      }
    } else counts.held = gone.length;
    st.inventory = [...next, ...(guarded ? kept : [])];

    const newRevision = st.status.lastAppliedRevision !== revision;
    st.status.lastAppliedRevision = revision;
    this.lastGood = { revision, objects };
    this.d.metrics.setLastApplied(this.d.sync.name, revision);
    if (!drift) {
      st.status.rejectedRevision = undefined;
      st.status.rejectedBecause = undefined;
    }
    const summary = `${counts.applied} applied, ${counts.deleted} deleted`;
    this.sync.record(started, revision, trigger, guarded ? 'Held' : 'Succeeded', guarded ? `${gone.length} deletions held by the mass-delete guard` : summary, counts);
    this.d.log.info({ revision, trigger, ...counts, durationMs: Date.now() - started }, guarded ? 'applied, deletions held' : 'applied');
    st.heldRevision = guarded ? revision : undefined;
    if (st.status.rejectedRevision) return true; // the newest revision is still rejected: its conditions stay.
    if (guarded) {
      held(st, revision, gone.length);
      // In the cluster the confirmation is an annotation on the Sync, not a CLI flag.
      const which = `${gone.length} deletions held by the mass-delete guard (massDeleteThreshold ${this.d.massDeleteThreshold}%): ${gone.map(describeEntry).slice(0, 5).join(', ')}`;
      const confirm = `confirm with kubectl annotate sync ${this.d.sync.name} ${allowMassDeleteAnnotation}=${revision}`;
      st.condition('Ready', 'False', reasons.deletionHeld, `${revision} applied except ${which}; ${confirm}`);
      this.d.event('Warning', reasons.deletionHeld, `${gone.length} deletions of ${revision} held by the mass-delete guard`);
    } else if (this.d.sync.wait) return this.waitForObjects(revision, objects, summary, started, newRevision);
    else {
      this.waiting = undefined;
      st.health = undefined;
      succeeded(st, revision, summary);
    }
    return true;
  }

  /** `wait: true`: Ready only once every applied object is Ready; one look now, then again by requeue (lookAgain). */
  private waitForObjects(revision: string, objects: DesiredObject[], summary: string, started: number, newRevision: boolean): Promise<boolean> {
    const st = this.d.store;
    const waiting = `${revision} applied; waiting for its ${objects.length} objects to be Ready`;
    progressing(st, waiting);
    // The last revision's Ready True must not stand beside the new lastAppliedRevision: a dependent Sync would start early. Drift runs of a Ready revision keep it.
    if (newRevision) st.condition('Ready', 'Unknown', reasons.progressing, waiting);
    // The same revision applied again (a webhook, drift) keeps the deadline of its first look.
    const since = this.since?.revision === revision ? this.since.at : started;
    this.since = { revision, at: since };
    return this.look({ revision, objects, summary, since });
  }

  /** A run of trigger 'health': one more look at the objects of the revision applied, then the run's end as every run ends. */
  private async lookAgain(w: Waiting, trigger: Trigger): Promise<boolean> {
    const started = Date.now();
    return this.sync.finish(started, trigger, await this.look(w));
  }

  /**
   * One look: all Ready → Ready; one Stalled, or still Reconciling after `timeout` from the first look → Ready False
   * and the run retries with backoff; else the status says what it waits for and the Sync runs again soon.
   */
  private async look(w: Waiting): Promise<boolean> {
    const st = this.d.store;
    const { revision, objects, summary } = w;
    this.waiting = undefined;
    // Kept only while the Sync waits: a look that ends the wait (either way) starts the next one's clock afresh.
    const since = this.since;
    this.since = undefined;
    let h: ObjectsHealth;
    try {
      h = await readHealth(this.d.writer, objects);
    } catch (cause) {
      applyFailed(st, reasons.healthCheckFailed, `${revision} applied, but its objects could not be read: ${(cause as Error).message}`);
      return false;
    }
    st.health = h;
    if (h.ready === objects.length) {
      succeeded(st, revision, `${summary}; all ${h.ready} objects Ready`);
      return true;
    }
    const waited = Date.now() - w.since;
    if (h.stalled === 0 && waited < this.d.sync.timeoutMs) {
      this.waiting = w;
      this.since = since;
      const first = h.failing[0] ? `; first: ${h.failing[0]}` : '';
      progressing(st, `${revision} applied; ${h.ready}/${objects.length} objects Ready, waiting for the rest${first}`);
      this.d.lookAgain(lookAgainMs(waited));
      return true;
    }
    const counts = `${h.ready}/${objects.length} objects Ready, ${h.stalled} Stalled, ${h.reconciling} Reconciling`;
    st.condition('Ready', 'False', reasons.healthCheckFailed, `${revision} applied; ${counts}; not Ready: ${h.failing.slice(0, 3).join('; ')}`);
    if (h.stalled > 0) st.condition('Stalled', 'True', reasons.healthCheckFailed, `fix the Stalled objects: ${h.failing[0] ?? ''}`);
    else st.condition('Stalled', 'False', reasons.retrying, 'checking again with backoff');
    this.d.event('Warning', reasons.healthCheckFailed, `${revision}: ${counts}; first: ${h.failing[0] ?? ''}`);
    this.sync.healthFailed(revision, `revision ${revision} applied, but not Ready: ${counts}`, h.failing[0] ?? '');
    return false;
  }

  /** The Sync carries the confirmation for the held revision (or for `revision`). */
  private confirmsHeld(revision?: string): boolean {
    const want = revision ?? this.d.store.heldRevision;
    return want !== undefined && this.d.annotations()[allowMassDeleteAnnotation] === want;
  }

  private failed(started: number, revision: string, trigger: Trigger, drift: boolean, message: string, counts?: Record<string, number>, written: DesiredObject[] = []): false {
    const st = this.d.store;
    const known = new Set(st.inventory.map((e) => describeEntry(e)));
    st.inventory = [...st.inventory, ...written.map((o) => o.entry).filter((e) => !known.has(describeEntry(e)))];
    this.d.log.error({ revision, error: message }, 'apply failed');
    this.sync.record(started, revision, trigger, 'Failed', message, counts);
    if (!drift || st.get('Ready')?.status === 'True') applyFailed(st, 'ApplyFailed', `${revision}: ${message}`);
    return false;
  }
}
