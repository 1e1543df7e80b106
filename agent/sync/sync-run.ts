import { formatDiagnostic } from '../diagnostic.ts';
import { makeNotice, type Notice, type NoticeEvent } from '../notify/notice.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { Source } from '../source/source.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { checkPath } from '../validate/check-path.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { applyFailed, artifactFailed, finished, held, progressing, reasons, rejected, succeeded } from './conditions.ts';
import { driftDue } from './drift-policy.ts';
import { fetchStep } from './fetch-step.ts';
import { repoPath } from './repo-path.ts';
import type { Trigger } from './scheduler.ts';
import { formatDuration } from '../util/duration.ts';
import type { RunRecord, RunResult, SyncStatusStore } from './status.ts';
import type { ObjectsLook, SyncOutcome } from './outcome.ts';
import type { CrossSyncLinks } from './cross-sync.ts';
import type { PathCheck } from '../validate/check-path.ts';

/** One revision, loaded and validated once, handed down as data. */
export interface LoadedRevision {
  revision: string;
  /** The folder it was read from (the standalone agent's private copy; the cluster's checkout). */
  dir: string;
  validated: ValidatedRevision;
}

/**
 * What differs between the two front ends' Sync runs: where a revision is
 * applied (the standalone agent: OpenStack through the engine; the cluster:
 * custom resources through the API server) and what "the last good one" is.
 * An applier returns what an apply came to (a SyncOutcome) and never records
 * it: the run does.
 */
export interface SyncApplier {
  /** Only the leader fetches and writes; the standalone agent always does. */
  acting(): boolean;
  /** Whether the applied revision is all there is to do (the cluster: no held deletion confirmed since). */
  upToDate(revision: string): boolean;
  /** Where the fetched files are read from: the standalone agent copies them out (drift correction outlives the source's checkout). */
  keep(revision: string, dir: string): Promise<string>;
  /** Applies a revision. `drift`: the applied revision again, on a timed run. */
  apply(rev: LoadedRevision, trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<SyncOutcome>;
  /** Applies the last good revision again (drift correction); undefined when there is none. */
  applyLastGood(trigger: Trigger, signal: AbortSignal): Promise<SyncOutcome | undefined>;
  /** A registry notification's run (the standalone agent): only what it named, from the last good revision; undefined for a full run. */
  registryRun?(signal: AbortSignal): Promise<SyncOutcome | undefined>;
  /** `wait`: one look at the objects the revision applied; `afterApply` on the look right after the apply (the timeout counts from the first). */
  look?(revision: string, afterApply: boolean): Promise<ObjectsLook>;
  /** A rejection, or deletions held, said where this front end says such things (the cluster: an Event on the Sync). */
  said?(outcome: SyncOutcome): void;
  /** After a new revision's run (the standalone agent drops older copies). */
  settled?(dir: string): Promise<void>;
}

export interface SyncRunDeps {
  name: string;
  /** The Sync's `path`: diagnostics name files as the repository does. */
  path: string;
  intervalMs: number;
  source: Source;
  store: SyncStatusStore;
  registry: SchemaRegistry;
  metrics: AgentMetrics;
  log: Logger;
  /** Where the run's outcomes go (the Sync's `notify:` targets); never waits, never throws. */
  notify?: (n: Notice) => void;
  /** `wait` with objects not Ready yet: run again (trigger 'health') after this delay; the run ends meanwhile (the Scheduler's lookAgain). */
  lookAgain?: (afterMs: number) => void;
  /** References across Syncs (dependsOn): what the dependencies declare, what the dependents still reference. */
  crossSync?: CrossSyncLinks;
}

/**
 * The one Sync run of both front ends (Flux's source then kustomize side):
 * fetch; refuse a revision rejected before; skip what is applied already;
 * load and validate the new revision once; apply it; record and finish.
 * A revision that does not validate is rejected whole and the last good
 * one stays applied; timed runs re-apply the last good revision (drift).
 * The one place a Sync's outcome is recorded (`settle`).
 */
export class SyncRun {
  private readonly d: SyncRunDeps;
  private readonly a: SyncApplier;
  private lastApplyAt = 0;
  /** Whether the last full run converged (a partial pass reports from it). */
  private lastFullOk = true;
  /** The last revision that failed validation: refused again without a look (one the API server refused is tried again on timed runs). */
  private invalid?: string;
  /** The last revision announced as applied: drift runs and restarts do not announce it again. */
  private announced?: string;
  /** The run's outcome, sent when the run finishes (when the conditions are final). */
  private outcome?: { event: NoticeEvent; revision: string; summary: string; diagnostic?: string };
  /** `wait`: the revision whose objects are looked at again (progress by requeue); set by the run that asked. */
  private looking?: { revision: string; summary: string };

  constructor(deps: SyncRunDeps, applier: SyncApplier, invalid?: string) {
    this.d = deps;
    this.a = applier;
    this.invalid = invalid;
    if (deps.store.get('Ready')?.status === 'True') this.announced = deps.store.status.lastAppliedRevision;
  }

  /** One run; true when the Sync ended converged on the newest revision. */
  async run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    const looking = this.looking;
    this.looking = undefined;
    // A follower neither fetches nor writes: the leader's own clock covers the Sync.
    if (!this.a.acting()) return true;
    const { store: st, log } = this.d;
    const started = Date.now();
    // A look again of `wait`: only the objects are read (no fetch, no apply), unless a run of another trigger came first.
    if (trigger === 'health' && looking) return this.finish(started, trigger, await this.looked(looking, false, false));
    if (trigger === 'registry' && this.a.registryRun) {
      const partial = await this.a.registryRun(signal);
      if (partial) return this.finish(started, trigger, await this.settle(partial, started, trigger), { partial: true });
    }
    progressing(st, `fetching ${this.d.source.description} (${trigger})`);
    await st.save();
    const drift = driftDue(trigger, this.lastApplyAt, this.d.intervalMs);
    const lastGood = async (): Promise<void> => {
      if (!drift || signal.aborted) return;
      const at = Date.now();
      const o = await this.a.applyLastGood(trigger, signal);
      if (o && (await this.settle(o, at, trigger))) this.lastApplyAt = Date.now();
    };

    const fetched = await fetchStep(this.d.source, { sync: this.d.name, trigger, signal, store: st, metrics: this.d.metrics, log });
    if (!fetched.artifact) {
      // The cloud can still drift while the source is away: keep the last good revision applied.
      await lastGood();
      return this.finish(started, trigger, false);
    }
    const { revision } = fetched.artifact;
    if (revision === st.status.rejectedRevision && (!drift || this.invalid === revision)) {
      // Already rejected: nothing new to validate; a timed run still corrects drift with the last good revision.
      await lastGood();
      rejected(st, revision, st.status.rejectedBecause ?? [], st.get('Ready')?.reason === reasons.referencedByDependent);
      return this.finish(started, trigger, false);
    }
    if (revision === st.status.lastAppliedRevision && !drift && st.get('Ready')?.status === 'True' && this.a.upToDate(revision)) {
      // A webhook or watch event for what is already applied: nothing to do.
      log.debug({ revision, trigger }, 'revision unchanged');
      return this.finish(started, trigger, true, { skipped: true });
    }

    let dir: string;
    try {
      dir = await this.a.keep(revision, fetched.artifact.dir);
    } catch (err) {
      artifactFailed(st, revision, (err as Error).message);
      return this.finish(started, trigger, false);
    }
    st.status.lastAttemptedRevision = revision;
    // A new revision starts: a commit status goes to pending (a drift run of the applied one says nothing).
    if (revision !== st.status.lastAppliedRevision) this.d.notify?.(makeNotice('started', this.d.name, revision, `applying ${revision}`));
    // The whole revision loads and validates, once, or nothing of it is applied.
    const provided = await this.d.crossSync?.provided();
    const check = await checkPath(dir, this.d.registry, undefined, provided);
    const refusals = await this.refusals(check, dir);
    if (refusals) {
      this.reject(revision, refusals.lines, started, trigger, refusals.held);
      // Validity that hangs on other Syncs (what a dependency declares, what a dependent references) is looked at again on timed runs.
      if (!refusals.held && !provided) this.invalid = revision;
      await lastGood();
      await this.a.settled?.(dir);
      return this.finish(started, trigger, false);
    }
    const at = Date.now();
    const outcome = await this.a.apply({ revision, dir, validated: check.validated }, trigger, signal, drift && revision === st.status.lastAppliedRevision);
    const ok = await this.settle(outcome, at, trigger);
    if (ok) this.lastApplyAt = Date.now();
    // Refused by the API server (RBAC) rather than by validation: the last good revision stays applied.
    else if (st.status.rejectedRevision === revision) await lastGood();
    await this.a.settled?.(dir);
    return this.finish(started, trigger, ok);
  }

  /** Why a loaded revision must not be applied: its diagnostics (files as the repository names them), or references a depending Sync still holds. */
  private async refusals(check: PathCheck, dir: string): Promise<{ lines: string[]; held: boolean } | undefined> {
    if (check.diagnostics.length > 0)
      return { lines: check.diagnostics.map((x) => formatDiagnostic({ ...x, file: repoPath(x.file, dir, this.d.path) })), held: false };
    const held = (await this.d.crossSync?.stillReferenced(new Set(check.validated.manifests.map((m) => m.address)))) ?? [];
    return held.length > 0 ? { lines: held, held: true } : undefined;
  }

  /**
   * The one place a Sync's outcome is recorded: the run's record, the last
   * applied revision, the conditions, and what is announced when the run
   * finishes. True when the revision is applied (deletions held count as applied).
   */
  private async settle(o: SyncOutcome, started: number, trigger: Trigger): Promise<boolean> {
    const st = this.d.store;
    if (o.result === 'Stopped') return false;
    if (o.result === 'Rejected') {
      this.reject(o.revision, o.refusals, started, trigger);
      return false;
    }
    if (o.result === 'Failed') {
      this.d.log.error({ revision: o.revision, reason: o.reason, error: o.message, ...o.counts }, 'apply failed');
      this.record(started, o.revision, trigger, 'Failed', o.message, o.counts);
      // A drift run's failure does not hide another verdict (the newest revision rejected, the source failing).
      if (!o.drift || st.get('Ready')?.status === 'True') applyFailed(st, o.reason, `${o.revision}: ${o.message}`);
      return false;
    }
    const newRevision = st.status.lastAppliedRevision !== o.revision;
    st.status.lastAppliedRevision = o.revision;
    this.d.metrics.setLastApplied(this.d.name, o.revision);
    const isHeld = o.result === 'Held';
    this.record(started, o.revision, trigger, o.result, isHeld ? `${o.held} deletions held by the mass-delete guard` : o.summary, o.counts);
    this.d.log.info({ revision: o.revision, trigger, ...o.counts, durationMs: Date.now() - started }, isHeld ? 'applied, deletions held' : 'applied');
    if (!o.drift) {
      st.status.rejectedRevision = undefined;
      st.status.rejectedBecause = undefined;
    }
    if (st.status.rejectedRevision) return true; // the newest revision is still rejected: its conditions stay.
    if (isHeld) {
      held(st, o.revision, o.held, o.readyMessage);
      this.a.said?.(o);
    } else if (o.wait && this.a.look) return this.looked({ revision: o.revision, summary: o.summary }, true, newRevision);
    else succeeded(st, o.revision, o.summary);
    return true;
  }

  /** `wait`: Ready only once every applied object is Ready; one look now, then again by requeue (lookAgain). */
  private async looked(w: { revision: string; summary: string }, afterApply: boolean, newRevision: boolean): Promise<boolean> {
    const st = this.d.store;
    const { revision } = w;
    const l = await this.a.look!(revision, afterApply);
    if ('ready' in l) {
      succeeded(st, revision, `${w.summary}; all ${l.ready} objects Ready`);
      return true;
    }
    if ('unreadable' in l) {
      applyFailed(st, reasons.healthCheckFailed, `${revision} applied, but its objects could not be read: ${l.unreadable}`);
      return false;
    }
    if ('waiting' in l) {
      // The last revision's Ready True must not stand beside the new lastAppliedRevision: a dependent Sync would start early. Drift runs of a Ready revision keep it.
      if (newRevision) st.condition('Ready', 'Unknown', reasons.progressing, `${revision} applied; waiting for its ${l.objects} objects to be Ready`);
      progressing(st, l.waiting.reason);
      this.looking = w;
      this.d.lookAgain?.(l.waiting.afterMs);
      return true;
    }
    const { counts, failing, stalled } = l.notReady;
    st.condition('Ready', 'False', reasons.healthCheckFailed, `${revision} applied; ${counts}; not Ready: ${failing.slice(0, 3).join('; ')}`);
    if (stalled) st.condition('Stalled', 'True', reasons.healthCheckFailed, `fix the Stalled objects: ${failing[0] ?? ''}`);
    else st.condition('Stalled', 'False', reasons.retrying, 'checking again with backoff');
    // Announced as failed, the first failing object named.
    this.outcome = { event: 'failed', revision, summary: `revision ${revision} applied, but not Ready: ${counts}`, diagnostic: failing[0] ?? '' };
    return false;
  }

  /** A revision refused whole: the run's record, the conditions, and the front end's own word. */
  private reject(revision: string, lines: string[], started: number, trigger: Trigger, heldForDependent = false): void {
    const st = this.d.store;
    this.d.log.warn({ revision, errors: lines.length, first: lines[0] }, 'revision rejected: nothing applied');
    this.record(started, revision, trigger, 'Rejected', lines.slice(0, 5).join('\n'));
    st.status.rejectedRevision = revision;
    st.status.rejectedBecause = lines.slice(0, 20);
    rejected(st, revision, lines, heldForDependent);
    this.a.said?.({ result: 'Rejected', revision, refusals: lines });
  }

  private record(started: number, revision: string, trigger: Trigger, result: RunResult, message?: string, counts?: Record<string, number>): void {
    const durationMs = Date.now() - started;
    const run: RunRecord = { revision, trigger, startedAt: new Date(started).toISOString(), duration: formatDuration(durationMs), durationMs, result };
    if (message) run.message = message.slice(0, 4096);
    if (counts) run.counts = counts;
    this.d.store.record(run);
    if (result === 'Rejected')
      this.outcome = {
        event: 'rejected',
        revision,
        summary: `revision ${revision} rejected, nothing from it applied`,
        diagnostic: message?.split('\n')[0] ?? '',
      };
    else if (result === 'Failed') this.outcome = { event: 'failed', revision, summary: `revision ${revision} failed to apply`, diagnostic: message ?? '' };
    else if (result === 'Held') this.outcome = { event: 'held', revision, summary: message ?? 'deletions held' };
  }

  /** The run's outcome to the Sync's targets, once its conditions are final; `applied` only when Ready, once per revision. */
  private announce(ok: boolean): void {
    const o = this.outcome;
    this.outcome = undefined;
    const notify = this.d.notify;
    if (!notify) return;
    const ready = this.d.store.get('Ready');
    const applied = this.d.store.status.lastAppliedRevision;
    if (ok && ready?.status === 'True' && applied && applied !== this.announced) {
      this.announced = applied;
      notify(makeNotice('applied', this.d.name, applied, ready.message));
    } else if (o?.event === 'held') {
      // The Ready message names the held objects and how to confirm them.
      notify(makeNotice('held', this.d.name, o.revision, ready?.reason === 'DeletionHeld' ? ready.message : o.summary));
    } else if (o) notify(makeNotice(o.event, this.d.name, o.revision, o.summary, o.diagnostic));
  }

  /** Metrics and the Reconciling condition at the end of a run; a partial pass does not end a retry the last full run scheduled. */
  private async finish(started: number, trigger: Trigger, ok: boolean, opts: { skipped?: boolean; partial?: boolean } = {}): Promise<boolean> {
    const st = this.d.store;
    const m = this.d.metrics;
    const seconds = (Date.now() - started) / 1000;
    const result = opts.skipped ? 'skipped' : ok ? 'success' : 'failure';
    m.reconcileDuration.observe({ sync: this.d.name, result }, seconds);
    m.lastDuration.set({ sync: this.d.name }, seconds);
    m.reconciles.inc({ sync: this.d.name, result, trigger });
    m.ready.set({ sync: this.d.name }, st.get('Ready')?.status === 'True' ? 1 : 0);
    // A run that asked to look again (`wait`) is still progressing: its Reconciling stays, and its outcome is not announced yet.
    const lookingAgain = this.looking !== undefined;
    if (!lookingAgain) finished(st, opts.partial ? ok && this.lastFullOk : ok);
    if (!opts.skipped && !lookingAgain && this.a.acting()) this.announce(opts.partial ? ok && this.lastFullOk : ok);
    if (!opts.partial) this.lastFullOk = ok;
    if (this.a.acting()) await st.save();
    return ok;
  }
}
