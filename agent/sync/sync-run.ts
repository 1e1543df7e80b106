import { formatDiagnostic } from '../diagnostic.ts';
import { makeNotice, type Notice, type NoticeEvent } from '../notify/notice.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { Source } from '../source/source.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { checkPath } from '../validate/check-path.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { artifactFailed, finished, progressing, rejected } from './conditions.ts';
import { driftDue } from './drift-policy.ts';
import { fetchStep } from './fetch-step.ts';
import { repoPath } from './repo-path.ts';
import type { Trigger } from './scheduler.ts';
import { formatDuration } from '../util/duration.ts';
import type { RunRecord, RunResult, SyncStatusStore } from './status.ts';

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
 */
export interface SyncApplier {
  /** Only the leader fetches and writes; the standalone agent always does. */
  acting(): boolean;
  /** Whether the applied revision is all there is to do (the cluster: no held deletion confirmed since). */
  upToDate(revision: string): boolean;
  /** Where the fetched files are read from: the standalone agent copies them out (drift correction outlives the source's checkout). */
  keep(revision: string, dir: string): Promise<string>;
  /** Applies a revision; true when applied. `drift`: the applied revision again, on a timed run. */
  apply(rev: LoadedRevision, trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<boolean>;
  /** Applies the last good revision again (drift correction); false when there is none or it failed. */
  applyLastGood(trigger: Trigger, signal: AbortSignal): Promise<boolean>;
  /** A revision that does not validate, said where this front end says such things (the cluster: an Event on the Sync). */
  refused?(revision: string, lines: string[]): void;
  /** After a new revision's run (the standalone agent drops older copies). */
  settled?(dir: string): Promise<void>;
  /** The run just applied asked to look again at its objects (`wait` in the cluster): not finished, Reconciling stays True. */
  lookingAgain?(): boolean;
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
}

/**
 * The one Sync run of both front ends (Flux's source then kustomize side):
 * fetch; refuse a revision rejected before; skip what is applied already;
 * load and validate the new revision once; apply it; record and finish.
 * A revision that does not validate is rejected whole and the last good
 * one stays applied; timed runs re-apply the last good revision (drift).
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

  constructor(deps: SyncRunDeps, applier: SyncApplier, invalid?: string) {
    this.d = deps;
    this.a = applier;
    this.invalid = invalid;
    if (deps.store.get('Ready')?.status === 'True') this.announced = deps.store.status.lastAppliedRevision;
  }

  /** One run; true when the Sync ended converged on the newest revision. */
  async run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    // A follower neither fetches nor writes: the leader's own clock covers the Sync.
    if (!this.a.acting()) return true;
    const { store: st, log } = this.d;
    const started = Date.now();
    progressing(st, `fetching ${this.d.source.description} (${trigger})`);
    await st.save();
    const drift = driftDue(trigger, this.lastApplyAt, this.d.intervalMs);
    const lastGood = async (): Promise<void> => {
      if (drift && !signal.aborted && (await this.a.applyLastGood(trigger, signal))) this.lastApplyAt = Date.now();
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
      rejected(st, revision, st.status.rejectedBecause ?? []);
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
    const check = await checkPath(dir, this.d.registry);
    if (check.diagnostics.length > 0) {
      // Files as the repository names them, not as the agent's private copy does.
      this.reject(revision, check.diagnostics.map((x) => formatDiagnostic({ ...x, file: repoPath(x.file, dir, this.d.path) })), started, trigger);
      this.invalid = revision;
      await lastGood();
      await this.a.settled?.(dir);
      return this.finish(started, trigger, false);
    }
    const ok = await this.a.apply({ revision, dir, validated: check.validated }, trigger, signal, drift && revision === st.status.lastAppliedRevision);
    if (ok) this.lastApplyAt = Date.now();
    // Refused by the API server (RBAC) rather than by validation: the last good revision stays applied.
    else if (st.status.rejectedRevision === revision) await lastGood();
    await this.a.settled?.(dir);
    return this.finish(started, trigger, ok);
  }

  /** A revision refused whole: the run's record, the conditions, and the front end's own word. */
  reject(revision: string, lines: string[], started: number, trigger: Trigger): void {
    const st = this.d.store;
    this.d.log.warn({ revision, errors: lines.length, first: lines[0] }, 'revision rejected: nothing applied');
    this.record(started, revision, trigger, 'Rejected', lines.slice(0, 5).join('\n'));
    st.status.rejectedRevision = revision;
    st.status.rejectedBecause = lines.slice(0, 20);
    rejected(st, revision, lines);
    this.a.refused?.(revision, lines);
  }

  record(started: number, revision: string, trigger: Trigger, result: RunResult, message?: string, counts?: Record<string, number>): void {
    const durationMs = Date.now() - started;
    const run: RunRecord = { revision, trigger, startedAt: new Date(started).toISOString(), duration: formatDuration(durationMs), durationMs, result };
    if (message) run.message = message.slice(0, 4096);
    if (counts) run.counts = counts;
    this.d.store.record(run);
    if (result === 'Rejected') this.outcome = { event: 'rejected', revision, summary: `revision ${revision} rejected, nothing from it applied`, diagnostic: message?.split('\n')[0] ?? '' };
    else if (result === 'Failed') this.outcome = { event: 'failed', revision, summary: `revision ${revision} failed to apply`, diagnostic: message ?? '' };
    else if (result === 'Held') this.outcome = { event: 'held', revision, summary: message ?? 'deletions held' };
  }

  /** A `wait` that ended not Ready (an object Stalled, or the timeout passed): announced as failed, the first failing object named. */
  healthFailed(revision: string, summary: string, failing: string): void {
    this.outcome = { event: 'failed', revision, summary, diagnostic: failing };
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
  async finish(started: number, trigger: Trigger, ok: boolean, opts: { skipped?: boolean; partial?: boolean } = {}): Promise<boolean> {
    const st = this.d.store;
    const m = this.d.metrics;
    const seconds = (Date.now() - started) / 1000;
    const result = opts.skipped ? 'skipped' : ok ? 'success' : 'failure';
    m.reconcileDuration.observe({ sync: this.d.name, result }, seconds);
    m.lastDuration.set({ sync: this.d.name }, seconds);
    m.reconciles.inc({ sync: this.d.name, result, trigger });
    m.ready.set({ sync: this.d.name }, st.get('Ready')?.status === 'True' ? 1 : 0);
    // A run that asked to look again (`wait`) is still progressing: its Reconciling stays, and its outcome is not announced yet.
    const lookingAgain = this.a.lookingAgain?.() === true;
    if (!lookingAgain) finished(st, opts.partial ? ok && this.lastFullOk : ok);
    if (!opts.skipped && !lookingAgain && this.a.acting()) this.announce(opts.partial ? ok && this.lastFullOk : ok);
    if (!opts.partial) this.lastFullOk = ok;
    if (this.a.acting()) await st.save();
    return ok;
  }
}
