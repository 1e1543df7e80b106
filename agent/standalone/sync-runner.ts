import { join } from 'node:path';
import type { AgentConfig } from '../config/config.ts';
import type { SyncConfig } from '../config/syncs.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { sharedSchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { Source } from '../source/source.ts';
import { applyStep, type ApplyStepContext } from './apply-step.ts';
import { driftDue } from '../sync/drift-policy.ts';
import { fetchStep } from '../sync/fetch-step.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import type { CloudStepOptions } from './revision-cloud.ts';
import type { Trigger } from '../sync/scheduler.ts';
import { Snapshots } from './snapshot.ts';
import { StatusStore, type SyncStatus, type SyncStatusStore } from '../sync/status.ts';
import { artifactFailed, finished, progressing, rejected } from '../sync/conditions.ts';

export interface SyncRunnerDeps {
  config: AgentConfig;
  cloud: string;
  cloudsFile?: string;
  source: Source;
  logger: Logger;
  metrics: AgentMetrics;
  secrets: SecretResolver;
  /** Called with the time of each OpenStack write (benchmarks and logs). */
  onWrite?: (at: number) => void;
  /** Where the status goes; default: status.json in the Sync's state dir. */
  store?: SyncStatusStore;
  /** Drive the OpenStackCloud a revision declares before its resources (`agent --kubeconfig`). */
  cloudStep?: CloudStepOptions;
}

/**
 * One Sync's run: the fetch step, then (a new revision) a private copy and
 * the apply step. A revision that fails validation is rejected whole and the
 * last good one stays applied; timed runs re-apply the last good revision to
 * correct drift, whatever the newest fetched revision looks like.
 */
export class SyncRunner {
  readonly name: string;
  readonly sync: SyncConfig;
  readonly store: SyncStatusStore;
  /** Set after the first successful apply since the agent started (readiness). */
  reconciledOnce = false;
  private readonly snapshots: Snapshots;
  private readonly log: Logger;
  private readonly deps: SyncRunnerDeps;
  private readonly applyConfig: AgentConfig;
  private lastApplyAt = 0;
  private openstack?: OpenStackCloud;
  /** Called on every OpenStack write of the current run. */
  private onWrite?: (at: number) => void;
  /** Manifests a registry notification named (Images following a tag that moved), for the next 'registry' run. */
  private readonly moved = new Set<string>();
  /** Whether the last full run converged (a partial pass reports Reconciling from it). */
  private lastFullOk = true;

  private constructor(sync: SyncConfig, store: SyncStatusStore, deps: SyncRunnerDeps, stateDir: string) {
    this.sync = sync;
    this.store = store;
    this.deps = deps;
    this.name = sync.name;
    this.applyConfig = { ...deps.config, owner: sync.owner, projectPrefix: sync.projectPrefix, stateDir, ...(sync.imageVerify ? { imageVerify: sync.imageVerify } : {}) };
    this.snapshots = new Snapshots(join(stateDir, 'revisions'));
    this.log = deps.logger.child({ sync: sync.name });
  }

  static async create(sync: SyncConfig, deps: SyncRunnerDeps): Promise<SyncRunner> {
    const stateDir = join(deps.config.stateDir, 'syncs', sync.name);
    const store = deps.store ?? (await StatusStore.open(join(stateDir, 'status.json'), sync.name, deps.source.description, sync.suspend));
    const runner = new SyncRunner(sync, store, deps, stateDir);
    if (store.status.lastAppliedRevision) deps.metrics.setLastApplied(sync.name, store.status.lastAppliedRevision);
    deps.metrics.ready.set({ sync: sync.name }, store.get('Ready')?.status === 'True' ? 1 : 0);
    await store.save();
    return runner;
  }

  get status(): SyncStatus {
    return this.store.status;
  }

  /** A registry notification names these manifests: the next 'registry' run applies only them. */
  noteMoved(addresses: readonly string[]): void {
    for (const a of addresses) this.moved.add(a);
  }

  /** One run; true when the Sync ended converged on the newest revision. */
  async run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    const started = Date.now();
    const st = this.store;
    if (trigger === 'registry') {
      const partial = await this.runMoved(started, signal);
      if (partial !== undefined) return partial;
    } else this.moved.clear(); // a full run resolves them again anyway (they are marked moved)
    progressing(st, `fetching ${this.deps.source.description} (${trigger})`);
    await st.save();
    const drift = driftDue(trigger, this.lastApplyAt, this.sync.intervalMs);
    const lastGood = (): Promise<boolean> => (drift && st.status.lastGoodDir && !signal.aborted ? this.apply(st.status.lastAppliedRevision!, st.status.lastGoodDir, trigger, signal, true) : Promise.resolve(false));

    const fetched = await fetchStep(this.deps.source, { sync: this.name, trigger, signal, store: st, metrics: this.deps.metrics, log: this.log });
    if (!fetched.artifact) {
      // The cloud can still drift while the source is away: keep the last good revision applied.
      await lastGood();
      return this.finish(started, trigger, false);
    }

    const { revision } = fetched.artifact;
    if (revision === st.status.rejectedRevision) {
      // Already rejected: nothing new to validate; a timed run still corrects drift with the last good revision.
      await lastGood();
      rejected(st, revision, st.status.rejectedBecause ?? []);
      return this.finish(started, trigger, false);
    }
    if (revision === st.status.lastAppliedRevision && st.status.lastGoodDir && !drift && st.get('Ready')?.status === 'True') {
      // A webhook or watch event for what is already applied: nothing to do.
      this.log.debug({ revision, trigger }, 'revision unchanged');
      return this.finish(started, trigger, true, { skipped: true });
    }

    let dir: string;
    try {
      dir = await this.snapshots.take(revision, fetched.artifact.dir);
    } catch (err) {
      artifactFailed(st, revision, (err as Error).message);
      return this.finish(started, trigger, false);
    }
    st.status.lastAttemptedRevision = revision;
    const ok = await this.apply(revision, dir, trigger, signal, false);
    await this.snapshots.keepOnly([st.status.lastGoodDir, dir]);
    return this.finish(started, trigger, ok);
  }

  /**
   * A registry notification: the Images it named are resolved again and
   * applied from the last good revision, nothing else (no fetch, no other
   * kind, no prune); the full pass stays on the interval. Undefined when
   * there is nothing to do it with (no revision applied yet, nothing named,
   * or the revision no longer declares them): the caller runs the full pass.
   */
  private async runMoved(started: number, signal: AbortSignal): Promise<boolean | undefined> {
    const st = this.store;
    const only = [...this.moved].sort();
    this.moved.clear();
    const revision = st.status.lastAppliedRevision;
    if (!revision || !st.status.lastGoodDir) return undefined;
    // Nothing named: a full run since the event resolved them already.
    if (only.length === 0) return true;
    const ok = await this.apply(revision, st.status.lastGoodDir, 'registry', signal, true, only);
    if (ok === undefined) return undefined;
    return this.finish(started, 'registry', ok, { partial: true });
  }

  private async apply(revision: string, dir: string, trigger: Trigger, signal: AbortSignal, drift: boolean): Promise<boolean>;
  private async apply(revision: string, dir: string, trigger: Trigger, signal: AbortSignal, drift: boolean, only: readonly string[]): Promise<boolean | undefined>;
  private async apply(revision: string, dir: string, trigger: Trigger, signal: AbortSignal, drift: boolean, only?: readonly string[]): Promise<boolean | undefined> {
    let firstWrite = true;
    this.onWrite = (at) => {
      // The push-to-cloud latency ends here (benchmark and operators read this line).
      if (firstWrite) this.log.info({ revision, writeAtMs: at }, 'first OpenStack write of the run');
      firstWrite = false;
      this.deps.onWrite?.(at);
    };
    const ctx: ApplyStepContext = {
      sync: this.sync,
      config: this.applyConfig,
      store: this.store,
      log: this.log,
      metrics: this.deps.metrics,
      cloud: this.deps.cloud,
      cloudsFile: this.deps.cloudsFile,
      openstack: this.client(),
      registry: sharedSchemaRegistry(),
      secrets: this.deps.secrets,
      ...(this.deps.cloudStep ? { cloudStep: this.deps.cloudStep } : {}),
    };
    const result = await applyStep(ctx, revision, dir, trigger, signal, { drift, ...(only ? { only } : {}) });
    if (result === 'skipped') return undefined;
    if (result !== 'applied') return false;
    // A partial pass corrects no drift: the interval's full pass stays due.
    if (only) return true;
    this.lastApplyAt = Date.now();
    this.reconciledOnce = true;
    return true;
  }

  /** One OpenStack client per Sync for the agent's life: tokens and the catalog are reused, calls are counted for /metrics. */
  private client(): OpenStackCloud {
    this.openstack ??= OpenStackCloud.fromCloudsYaml(this.deps.cloud, this.deps.cloudsFile, this.deps.metrics.countersFor(this.name, (at) => this.onWrite?.(at)));
    return this.openstack;
  }

  private async finish(started: number, trigger: Trigger, ok: boolean, opts: { skipped?: boolean; partial?: boolean } = {}): Promise<boolean> {
    const st = this.store;
    const seconds = (Date.now() - started) / 1000;
    const result = opts.skipped ? 'skipped' : ok ? 'success' : 'failure';
    this.deps.metrics.reconcileDuration.observe({ sync: this.name, result }, seconds);
    this.deps.metrics.lastDuration.set({ sync: this.name }, seconds);
    this.deps.metrics.reconciles.inc({ sync: this.name, result, trigger });
    this.deps.metrics.ready.set({ sync: this.name }, st.get('Ready')?.status === 'True' ? 1 : 0);
    // A partial pass does not end a retry the last full run scheduled.
    finished(st, opts.partial ? ok && this.lastFullOk : ok);
    if (!opts.partial) this.lastFullOk = ok;
    await st.save();
    return ok;
  }
}
