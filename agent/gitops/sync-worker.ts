import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import type { SyncConfig } from '../config/syncs.ts';
import { formatDiagnostic } from '../diagnostic.ts';
import { loadTree } from '../load/load.ts';
import { driftDue } from '../sync/drift-policy.ts';
import { fetchStep } from '../sync/fetch-step.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { repoPath } from '../sync/repo-path.ts';
import type { Trigger } from '../sync/scheduler.ts';
import { formatDuration, type RunRecord, type RunResult } from '../sync/status.ts';
import { applyFailed, finished, held, progressing, reasons, rejected, succeeded } from '../sync/conditions.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { Source } from '../source/source.ts';
import { validateRevision } from '../validate/validate.ts';
import { applyOne, desiredObjects, difference, dryRunApply, pruneObjects, type DesiredObject } from './cluster-apply.ts';
import { describeEntry, fieldManagerOf } from './inventory.ts';
import type { KubeSyncStatusStore } from './status-store.ts';

/** The annotation that confirms deletions the mass-delete guard held: its value is the held revision. */
export const allowMassDeleteAnnotation = 'kupenstack.io/allow-mass-delete';

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
}

/**
 * One Sync resource's run in the cluster (DESIGN §9, loop 1; Flux's
 * kustomize-controller): fetch (agent/sync/fetch-step.ts), load and validate
 * the whole revision, a server-side dry-run of every object as the Sync's
 * ServiceAccount, then the real apply, prune of what left Git, and the
 * status. A revision refused at any step before the real apply writes
 * nothing; timed runs re-apply the last good revision (drift).
 */
export class SyncWorker {
  private readonly d: SyncWorkerDeps;
  private lastGood?: { revision: string; objects: DesiredObject[] };
  private lastApplyAt = 0;
  /** The last revision that failed validation (not the API server's dry-run). */
  private invalid?: string;

  constructor(deps: SyncWorkerDeps) {
    this.d = deps;
  }

  get name(): string {
    return this.d.sync.name;
  }

  async run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    // A follower neither fetches nor writes: the leader's own clock covers the Sync.
    if (!this.d.acting()) return true;
    const { store: st, sync } = this.d;
    const started = Date.now();
    progressing(st, `fetching ${this.d.source.description} (${trigger})`);
    await st.save();
    const drift = driftDue(trigger, this.lastApplyAt, sync.intervalMs);
    const lastGood = async (): Promise<void> => {
      if (drift && this.lastGood && !signal.aborted) await this.apply(this.lastGood.revision, this.lastGood.objects, trigger, signal, true);
    };

    const fetched = await fetchStep(this.d.source, { sync: sync.name, trigger, signal, store: st, metrics: this.d.metrics, log: this.d.log });
    if (!fetched.artifact) {
      await lastGood();
      return this.finish(started, trigger, false);
    }
    const { revision, dir } = fetched.artifact;
    // An invalid revision stays rejected until the next commit; one the API server refused (RBAC) is tried again on timed runs.
    if (revision === st.status.rejectedRevision && (!drift || this.invalid === revision)) {
      await lastGood();
      rejected(st, revision, st.status.rejectedBecause ?? []);
      return this.finish(started, trigger, false);
    }
    if (revision === st.status.lastAppliedRevision && this.lastGood?.revision === revision && !drift && st.get('Ready')?.status === 'True' && !this.confirmsHeld()) {
      this.d.log.debug({ revision, trigger }, 'revision unchanged');
      return this.finish(started, trigger, true, true);
    }

    // The whole revision loads and validates, or nothing of it is applied.
    const loaded = await loadTree(dir);
    const validated = validateRevision(loaded.documents, this.d.registry);
    const fileOf = (file: string): string => repoPath(join(dir, file), dir, sync.path);
    const diagnostics = [...loaded.diagnostics, ...validated.diagnostics];
    if (diagnostics.length > 0) {
      const lines = diagnostics.map((x) => formatDiagnostic({ ...x, file: fileOf(x.file) }));
      this.reject(revision, lines, started, trigger);
      this.invalid = revision;
      await lastGood();
      return this.finish(started, trigger, false);
    }
    st.status.lastAttemptedRevision = revision;
    const objects = desiredObjects(validated.manifests, this.d.registry, sync.name, (m) => fileOf(m.source.file));
    // The applied revision again on a timed run: drift correction (a kubectl edit is put back).
    const ok = await this.apply(revision, objects, trigger, signal, drift && revision === st.status.lastAppliedRevision);
    if (!ok && st.status.rejectedRevision === revision) await lastGood();
    return this.finish(started, trigger, ok);
  }

  private reject(revision: string, lines: string[], started: number, trigger: Trigger): void {
    const st = this.d.store;
    this.d.log.warn({ revision, errors: lines.length, first: lines[0] }, 'revision rejected: nothing applied');
    this.record(started, revision, trigger, 'Rejected', lines.slice(0, 5).join('\n'));
    st.status.rejectedRevision = revision;
    st.status.rejectedBecause = lines.slice(0, 20);
    rejected(st, revision, lines);
    this.d.event('Warning', reasons.validationFailed, `revision ${revision} rejected, nothing applied: ${lines[0] ?? ''}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}`);
  }

  /** Dry-run, apply, prune; true when the revision is applied (deletions held count as applied). */
  private async apply(revision: string, objects: DesiredObject[], trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<boolean> {
    const st = this.d.store;
    const started = Date.now();
    const manager = fieldManagerOf(this.d.sync.name);
    progressing(st, `${drift ? 'correcting drift with' : 'applying'} ${revision}`);
    await st.save();
    this.d.log.info({ revision, trigger, drift, objects: objects.length }, drift ? 'correcting drift' : 'applying revision');

    const dry = await dryRunApply(this.d.writer, objects, manager, signal);
    if (dry.transient) return this.failed(started, revision, trigger, drift, `the API server could not check ${revision}: ${dry.transient.message}`);
    if (dry.refused.length > 0) {
      this.reject(revision, dry.refused, started, trigger);
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

    st.status.lastAppliedRevision = revision;
    this.lastGood = { revision, objects };
    this.lastApplyAt = Date.now();
    this.d.metrics.setLastApplied(this.d.sync.name, revision);
    if (!drift) {
      st.status.rejectedRevision = undefined;
      st.status.rejectedBecause = undefined;
    }
    const summary = `${counts.applied} applied, ${counts.deleted} deleted`;
    this.record(started, revision, trigger, guarded ? 'Held' : 'Succeeded', guarded ? `${gone.length} deletions held by the mass-delete guard` : summary, counts);
    this.d.log.info({ revision, trigger, ...counts, durationMs: Date.now() - started }, guarded ? 'applied, deletions held' : 'applied');
    st.heldRevision = guarded ? revision : undefined;
    if (st.status.rejectedRevision) return true; // the newest revision is still rejected: its conditions stay.
    if (guarded) {
      held(st, revision, gone.length);
      // In the cluster the confirmation is an annotation on the Sync, not a CLI flag.
      st.condition('Ready', 'False', reasons.deletionHeld, `${revision} applied except ${gone.length} deletions held by the mass-delete guard (massDeleteThreshold ${this.d.massDeleteThreshold}%): ${gone.map(describeEntry).slice(0, 5).join(', ')}; confirm with kubectl annotate sync ${this.d.sync.name} ${allowMassDeleteAnnotation}=${revision}`);
      this.d.event('Warning', reasons.deletionHeld, `${gone.length} deletions of ${revision} held by the mass-delete guard`);
    } else succeeded(st, revision, summary);
    return true;
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
    this.record(started, revision, trigger, 'Failed', message, counts);
    if (!drift || st.get('Ready')?.status === 'True') applyFailed(st, 'ApplyFailed', `${revision}: ${message}`);
    return false;
  }

  private record(started: number, revision: string, trigger: Trigger, result: RunResult, message?: string, counts?: Record<string, number>): void {
    const durationMs = Date.now() - started;
    const run: RunRecord = { revision, trigger, startedAt: new Date(started).toISOString(), duration: formatDuration(durationMs), durationMs, result };
    if (message) run.message = message.slice(0, 4096);
    if (counts) run.counts = counts;
    this.d.store.record(run);
  }

  private async finish(started: number, trigger: Trigger, ok: boolean, skipped = false): Promise<boolean> {
    const st = this.d.store;
    const seconds = (Date.now() - started) / 1000;
    const result = skipped ? 'skipped' : ok ? 'success' : 'failure';
    const m = this.d.metrics;
    m.reconcileDuration.observe({ sync: this.name, result }, seconds);
    m.lastDuration.set({ sync: this.name }, seconds);
    m.reconciles.inc({ sync: this.name, result, trigger });
    m.ready.set({ sync: this.name }, st.get('Ready')?.status === 'True' ? 1 : 0);
    finished(st, ok);
    if (this.d.acting()) await st.save();
    return ok;
  }
}
