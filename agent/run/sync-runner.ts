import { join } from 'node:path';
import { applyPath, type ApplyOutcome } from '../act/apply.ts';
import type { AgentConfig } from '../config/config.ts';
import type { SyncConfig } from '../config/syncs.ts';
import { formatDiagnostic } from '../diagnostic.ts';
import { KupenstackError } from '../errors.ts';
import { SourceError, type Artifact, type Source } from '../source/source.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { loadSchemaRegistry, type SchemaRegistry } from '../schema/registry.ts';
import { readState } from '../status/state.ts';
import type { Logger } from './logger.ts';
import type { AgentMetrics } from './metrics.ts';
import type { Trigger } from './scheduler.ts';
import { Snapshots } from './snapshot.ts';
import { formatDuration, StatusStore, type RunRecord, type RunResult } from './status.ts';

export interface SyncRunnerDeps {
  config: AgentConfig;
  cloud: string;
  cloudsFile?: string;
  source: Source;
  logger: Logger;
  metrics: AgentMetrics;
  /** Called with the time of each OpenStack write (benchmarks and logs). */
  onWrite?: (at: number) => void;
}

/** Ready-false reasons per source failure, and whether a human must act (Stalled) or a retry may fix it. */
const sourceReasons: Record<SourceError['failure'], { reason: string; stalled: boolean }> = {
  unreachable: { reason: 'SourceUnreachable', stalled: false },
  auth: { reason: 'AuthenticationFailed', stalled: true },
  'ref-not-found': { reason: 'RefNotFound', stalled: true },
  signature: { reason: 'SignatureVerificationFailed', stalled: true },
  path: { reason: 'PathNotFound', stalled: true },
};

/**
 * One Sync's run: fetch → (new revision) copy, validate, apply → status.
 * A revision that fails validation is rejected whole and the last good one
 * stays applied; timed runs re-apply the last good revision to correct
 * drift, whatever the newest fetched revision looks like.
 */
export class SyncRunner {
  readonly name: string;
  /** Config of this Sync's applies: its own owner, project prefix and state dir. */
  private readonly applyConfig: AgentConfig;
  private readonly snapshots: Snapshots;
  private readonly log: Logger;
  /** Set after the first successful apply since the agent started (readiness). */
  reconciledOnce = false;
  private lastApplyAt = 0;
  private openstack?: OpenStackCloud;
  /** Called on every OpenStack write of the current run. */
  private onWrite?: (at: number) => void;

  readonly sync: SyncConfig;
  readonly store: StatusStore;
  private readonly deps: SyncRunnerDeps;

  private constructor(sync: SyncConfig, store: StatusStore, deps: SyncRunnerDeps, stateDir: string) {
    this.sync = sync;
    this.store = store;
    this.deps = deps;
    this.name = sync.name;
    this.applyConfig = { ...deps.config, owner: sync.owner, projectPrefix: sync.projectPrefix, stateDir };
    this.snapshots = new Snapshots(join(stateDir, 'revisions'));
    this.log = deps.logger.child({ sync: sync.name });
  }

  static async create(sync: SyncConfig, deps: SyncRunnerDeps): Promise<SyncRunner> {
    const stateDir = join(deps.config.stateDir, 'syncs', sync.name);
    const store = await StatusStore.open(join(stateDir, 'status.json'), sync.name, deps.source.description, sync.suspend);
    const runner = new SyncRunner(sync, store, deps, stateDir);
    if (store.status.lastAppliedRevision) deps.metrics.setLastApplied(sync.name, store.status.lastAppliedRevision);
    deps.metrics.ready.set({ sync: sync.name }, store.get('Ready')?.status === 'True' ? 1 : 0);
    await store.save();
    return runner;
  }

  get status(): StatusStore['status'] {
    return this.store.status;
  }

  /** One run; true when the Sync ended converged on the newest revision. */
  async run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    const started = Date.now();
    const st = this.store;
    st.condition('Reconciling', 'True', 'Progressing', `fetching ${this.deps.source.description} (${trigger})`);
    await st.save();

    let artifact: Artifact | undefined;
    let fetchError: KupenstackError | undefined;
    const fetchStart = performance.now();
    try {
      artifact = await this.deps.source.fetch(signal);
      this.deps.metrics.fetchDuration.observe({ sync: this.name, result: 'ok' }, (performance.now() - fetchStart) / 1000);
      this.deps.metrics.fetches.inc({ sync: this.name, result: 'ok' });
      this.log.debug({ revision: artifact.revision, trigger }, 'fetched');
    } catch (err) {
      fetchError = asError(err, signal);
      const result = err instanceof SourceError ? err.failure : signal.aborted ? 'aborted' : 'error';
      this.deps.metrics.fetchDuration.observe({ sync: this.name, result }, (performance.now() - fetchStart) / 1000);
      this.deps.metrics.fetches.inc({ sync: this.name, result });
    }

    if (fetchError) {
      const { reason, stalled } = fetchError instanceof SourceError ? sourceReasons[fetchError.failure] : signal.aborted ? { reason: abortReason(signal), stalled: false } : { reason: 'FetchFailed', stalled: false };
      const keep = st.status.lastAppliedRevision ? ` The last applied revision ${st.status.lastAppliedRevision} stays applied.` : '';
      this.log.warn({ reason, trigger, error: fetchError.message }, 'fetch failed');
      st.condition('Ready', 'False', reason, `${fetchError.message.replace(/([^.!?])$/, '$1.')}${keep}`);
      st.condition('Stalled', stalled ? 'True' : 'False', stalled ? reason : 'Retrying', stalled ? 'fix the source settings; the agent keeps retrying' : 'retrying with backoff');
      // The cloud can still drift while the source is away: keep the last good revision applied.
      if (this.driftDue(trigger) && st.status.lastGoodDir && !signal.aborted) await this.apply(st.status.lastAppliedRevision!, st.status.lastGoodDir, trigger, signal, { drift: true });
      return this.finish(started, trigger, false);
    }

    const revision = artifact!.revision;
    if (revision === st.status.rejectedRevision) {
      // Already rejected: nothing new to validate; a timed run still corrects drift with the last good revision.
      if (this.driftDue(trigger) && st.status.lastGoodDir) await this.apply(st.status.lastAppliedRevision!, st.status.lastGoodDir, trigger, signal, { drift: true });
      this.reject(revision, st.status.rejectedBecause ?? []);
      return this.finish(started, trigger, false);
    }
    if (revision === st.status.lastAppliedRevision && st.status.lastGoodDir && !this.driftDue(trigger) && st.get('Ready')?.status === 'True') {
      // A webhook or watch event for what is already applied: nothing to do.
      this.log.debug({ revision, trigger }, 'revision unchanged');
      return this.finish(started, trigger, true, { skipped: true });
    }

    let dir: string;
    try {
      dir = await this.snapshots.take(revision, artifact!.dir);
    } catch (err) {
      st.condition('Ready', 'False', 'ArtifactFailed', `cannot copy revision ${revision}: ${(err as Error).message}`);
      return this.finish(started, trigger, false);
    }
    st.status.lastAttemptedRevision = revision;
    const ok = await this.apply(revision, dir, trigger, signal, { drift: false });
    await this.snapshots.keepOnly([st.status.lastGoodDir, dir]);
    return this.finish(started, trigger, ok);
  }

  /** Validate and apply one revision's copy; records the run in the history. */
  private async apply(revision: string, dir: string, trigger: Trigger, signal: AbortSignal, opts: { drift: boolean }): Promise<boolean> {
    const st = this.store;
    const started = Date.now();
    st.condition('Reconciling', 'True', 'Progressing', `${opts.drift ? 'correcting drift with' : 'applying'} ${revision}`);
    await st.save();
    this.log.info({ revision, trigger, drift: opts.drift }, opts.drift ? 'correcting drift' : 'applying revision');
    let outcome: ApplyOutcome;
    let firstWrite = true;
    this.onWrite = (at) => {
      // The push-to-cloud latency ends here (benchmark and operators read this line).
      if (firstWrite) this.log.info({ revision, writeAtMs: at }, 'first OpenStack write of the run');
      firstWrite = false;
      this.deps.onWrite?.(at);
    };
    try {
      outcome = await applyPath({
        path: dir,
        cloud: this.deps.cloud,
        cloudsFile: this.deps.cloudsFile,
        config: this.applyConfig,
        prune: this.sync.prune,
        allowMassDelete: false,
        log: (line) => this.log.info({ revision }, line.replace(/\s+/, ' ')),
        signal,
        registry: schemas(),
        openstack: this.client(),
      });
    } catch (err) {
      const e = asError(err, signal);
      const reason = signal.aborted ? abortReason(signal) : 'ApplyFailed';
      this.log.error({ revision, reason, error: e.message }, 'apply failed');
      this.record(revision, trigger, started, 'Failed', e.message);
      if (!opts.drift || st.get('Ready')?.status === 'True') {
        st.condition('Ready', 'False', reason, `${revision}: ${e.message}`);
        st.condition('Stalled', 'False', 'Retrying', 'retrying with backoff');
      }
      return false;
    }

    if (outcome.diagnostics.length > 0) {
      const lines = outcome.diagnostics.map(formatDiagnostic);
      this.log.warn({ revision, errors: outcome.diagnostics.length, first: lines[0] }, 'revision rejected: nothing applied');
      this.record(revision, trigger, started, 'Rejected', lines.slice(0, 5).join('\n'));
      st.status.rejectedRevision = revision;
      st.status.rejectedBecause = lines.slice(0, 20);
      this.reject(revision, lines);
      return false;
    }

    const r = outcome.report!;
    const counts = { created: r.created, updated: r.updated, replaced: r.replaced, deleted: r.deleted, healed: r.healed, unchanged: r.unchanged, failed: r.errors.length };
    await this.updateResourceMetrics(r.errors.map((e) => e.address));
    const summary = `${r.created} created, ${r.updated} updated, ${r.replaced} replaced, ${r.deleted} deleted, ${r.healed} healed, ${r.unchanged} unchanged`;
    if (r.errors.length > 0) {
      const message = `${r.errors.length} errors applying ${revision}: ${r.errors.slice(0, 3).map((e) => e.message).join('; ')}`;
      this.log.error({ revision, ...counts }, message);
      this.record(revision, trigger, started, 'Failed', message, counts);
      if (!st.status.rejectedRevision || !opts.drift) {
        st.condition('Ready', 'False', 'ApplyFailed', message);
        st.condition('Stalled', 'False', 'Retrying', 'retrying with backoff');
      }
      return false;
    }

    // Applied: this copy becomes the last good revision.
    this.lastApplyAt = Date.now();
    st.status.lastAppliedRevision = revision;
    st.status.lastGoodDir = dir;
    this.deps.metrics.setLastApplied(this.name, revision);
    this.reconciledOnce = true;
    const held = r.held.length > 0;
    this.record(revision, trigger, started, held ? 'Held' : 'Succeeded', held ? `${r.held.length} deletions held by the mass-delete guard` : summary, counts);
    this.log.info({ revision, trigger, ...counts, durationMs: Date.now() - started }, held ? 'applied, deletions held' : 'applied');
    if (!opts.drift) {
      st.status.rejectedRevision = undefined;
      st.status.rejectedBecause = undefined;
    }
    if (st.status.rejectedRevision) return true; // the newest revision is still rejected: its conditions stay.
    if (held) {
      st.condition('Ready', 'False', 'DeletionHeld', `${revision} applied except ${r.held.length} deletions held by the mass-delete guard (massDeleteThreshold); apply them with kupenstack apply --prune --allow-mass-delete`);
      st.condition('Stalled', 'True', 'DeletionHeld', 'waiting for a person to confirm the deletions');
    } else {
      st.condition('Ready', 'True', 'ReconciliationSucceeded', `applied revision ${revision}: ${summary}`);
      st.condition('Stalled', 'False', 'ReconciliationSucceeded', '');
    }
    return true;
  }

  /** One OpenStack client per Sync for the agent's life: tokens and the catalog are reused, calls are counted for /metrics. */
  private client(): OpenStackCloud {
    this.openstack ??= OpenStackCloud.fromCloudsYaml(this.deps.cloud, this.deps.cloudsFile, this.deps.metrics.countersFor(this.name, (at) => this.onWrite?.(at)));
    return this.openstack;
  }

  /**
   * Whether this run re-applies what is applied, to correct drift: timed runs
   * do (Flux's interval semantics); retries only once an interval has passed
   * since the last apply, so a source that stays broken does not turn every
   * retry into a full apply; webhooks and watches only look for new revisions.
   */
  private driftDue(trigger: Trigger): boolean {
    if (trigger === 'interval' || trigger === 'schedule' || trigger === 'startup') return true;
    if (trigger === 'retry') return Date.now() - this.lastApplyAt >= this.sync.intervalMs;
    return false;
  }

  private reject(revision: string, lines: string[]): void {
    const st = this.store;
    const more = lines.length > 1 ? ` (and ${lines.length - 1} more)` : '';
    const keep = st.status.lastAppliedRevision ? `; ${st.status.lastAppliedRevision} stays applied` : '';
    st.condition('Ready', 'False', 'ValidationFailed', `revision ${revision} rejected, nothing from it applied${keep}: ${lines[0] ?? 'invalid'}${more}`);
    st.condition('Stalled', 'True', 'ValidationFailed', 'fix the files named in Ready and push again');
  }

  private record(revision: string, trigger: Trigger, started: number, result: RunResult, message?: string, counts?: Record<string, number>): void {
    const durationMs = Date.now() - started;
    const run: RunRecord = { revision, trigger, startedAt: new Date(started).toISOString(), duration: formatDuration(durationMs), durationMs, result };
    if (message) run.message = message.slice(0, 4096);
    if (counts) run.counts = counts;
    this.store.record(run);
  }

  private async finish(started: number, trigger: Trigger, ok: boolean, opts: { skipped?: boolean } = {}): Promise<boolean> {
    const st = this.store;
    const seconds = (Date.now() - started) / 1000;
    const result = opts.skipped ? 'skipped' : ok ? 'success' : 'failure';
    this.deps.metrics.reconcileDuration.observe({ sync: this.name, result }, seconds);
    this.deps.metrics.lastDuration.set({ sync: this.name }, seconds);
    this.deps.metrics.reconciles.inc({ sync: this.name, result, trigger });
    this.deps.metrics.ready.set({ sync: this.name }, st.get('Ready')?.status === 'True' ? 1 : 0);
    st.condition('Reconciling', 'False', ok ? 'Idle' : 'RetryScheduled', ok ? 'waiting for the next interval, schedule or webhook' : 'waiting for the retry');
    await st.save();
    return ok;
  }

  /** Objects by kind and state from the engine's own state file (ready, not-ready; failed for this run's errors). */
  private async updateResourceMetrics(failed: string[]): Promise<void> {
    const state = await readState(join(this.applyConfig.stateDir, `${this.sync.owner}.json`), this.sync.owner);
    const counts = new Map<string, number>();
    const failedSet = new Set(failed);
    for (const [address, r] of Object.entries(state.resources)) {
      const kind = address.split('/').at(-2) ?? 'unknown';
      const s = failedSet.has(address) || r.gaveUp ? 'failed' : r.ready === false ? 'not-ready' : 'ready';
      const key = `${kind} ${s}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    this.deps.metrics.setResources(this.name, counts);
  }
}


function abortReason(signal: AbortSignal): string {
  return signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError' ? 'Timeout' : 'Interrupted';
}

function asError(err: unknown, signal: AbortSignal): KupenstackError {
  if (err instanceof KupenstackError) return err;
  if (signal.aborted) {
    const timeout = abortReason(signal) === 'Timeout';
    return new KupenstackError(timeout ? 'timeout' : 'interrupted', timeout ? 'the run took longer than the Sync\'s timeout and was stopped at a safe point' : 'the run was interrupted (agent shutting down)', { cause: err });
  }
  return new KupenstackError('internal', err instanceof Error ? err.message : String(err), { cause: err });
}

let registry: SchemaRegistry | undefined;
/** The schemas are files of the agent itself: compiled once per process. */
function schemas(): SchemaRegistry {
  registry ??= loadSchemaRegistry();
  return registry;
}
