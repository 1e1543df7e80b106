import { join } from 'node:path';
import type { AgentConfig } from '../config/config.ts';
import type { ImageMemory } from '../kinds/kit/image-memory.ts';
import { imagesFollowing, type MovedTag } from '../hooks/registry-match.ts';
import type { SyncConfig } from '../sync/settings.ts';
import { Notifier } from '../notify/notifier.ts';
import { objectNotice } from '../notify/object-notice.ts';
import type { EventSink } from '../events/events.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { sharedSchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { Source } from '../source/source.ts';
import { applyStep, type ApplyStepContext } from './apply-step.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import type { CloudStepOptions } from './revision-cloud.ts';
import type { Trigger } from '../sync/scheduler.ts';
import { Snapshots } from './snapshot.ts';
import { StatusStore, type SyncStatus, type SyncStatusStore } from '../sync/status.ts';
import { SyncRun, type LoadedRevision, type SyncApplier } from '../sync/sync-run.ts';
import type { SyncOutcome } from '../sync/outcome.ts';
import { metricsSink } from '../telemetry/event-sinks.ts';
import { checkPath } from '../validate/check-path.ts';
import { dependencyObjects, standaloneCrossSync, type SyncPeer } from './cross-sync.ts';

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
  /** What the Image kind remembers between runs: the agent's one object (resolutions, registry clients). */
  images: ImageMemory;
  /** The agent's Syncs by name, for references across Syncs (dependsOn): set once they all exist. */
  peers?: () => ReadonlyMap<string, SyncPeer>;
}

/**
 * One Sync in the standalone agent: the shared Sync run (sync/sync-run.ts)
 * with OpenStack as where a revision is applied. A fetched revision is
 * copied out before it is validated, so drift correction can re-apply the
 * last *good* revision even after a bad one was fetched (and after a
 * restart); the last good revision stays in memory as loaded.
 */
export class SyncRunner implements SyncApplier {
  readonly name: string;
  readonly sync: SyncConfig;
  readonly store: SyncStatusStore;
  /** Set after the first successful apply since the agent started (readiness). */
  reconciledOnce = false;
  private readonly snapshots: Snapshots;
  private readonly stateDir: string;
  private readonly log: Logger;
  private readonly deps: SyncRunnerDeps;
  private readonly applyConfig: AgentConfig;
  private readonly registry = sharedSchemaRegistry();
  private readonly shared: SyncRun;
  private openstack?: OpenStackCloud;
  /** Called on every OpenStack write of the current run. */
  private onWrite?: (at: number) => void;
  /**
   * Manifests a registry notification named (Images following a tag that
   * moved): the one record of what moved. The next run takes them (a
   * 'registry' run applies only them) and hands them to the engine as
   * `refresh`; a run that fails gives back those it did not resolve again.
   */
  private readonly moved = new Set<string>();
  /** The current run's share of `moved`: every engine pass of the run resolves these again. */
  private refresh?: ReadonlySet<string>;
  /** The revision last handed to the engine: with the last good one, what a registry notification's tags are matched against. */
  private latest?: LoadedRevision;
  /** The last good revision as loaded: drift runs, the fast pass and registry passes take it as data. */
  private lastGood?: LoadedRevision;
  /** Engine events to the notify targets, when the Sync has any. */
  private notices?: EventSink;

  private constructor(sync: SyncConfig, store: SyncStatusStore, deps: SyncRunnerDeps, stateDir: string) {
    this.sync = sync;
    this.store = store;
    this.deps = deps;
    this.name = sync.name;
    this.applyConfig = {
      ...deps.config,
      owner: sync.owner,
      projectPrefix: sync.projectPrefix,
      stateDir,
      ...(sync.imageVerify ? { imageVerify: sync.imageVerify } : {}),
    };
    this.snapshots = new Snapshots(join(stateDir, 'revisions'));
    this.stateDir = stateDir;
    this.log = deps.logger.child({ sync: sync.name });
    const notifier = sync.notify
      ? new Notifier({ targets: sync.notify, secrets: deps.secrets, log: this.log, egressNamespace: `(Sync ${sync.name})` })
      : undefined;
    // What happens to its objects during a run (drift corrected, healed, a new image version), under the revision applied before.
    if (notifier) {
      this.notices = (e) => {
        const n = objectNotice(sync.name, store.status.lastAppliedRevision ?? '', e);
        if (n) notifier.notify(n);
      };
    }
    const run = {
      name: sync.name,
      path: sync.path,
      intervalMs: sync.intervalMs,
      source: deps.source,
      store,
      registry: this.registry,
      metrics: deps.metrics,
      log: this.log,
      ...(notifier ? { notify: notifier.notify.bind(notifier) } : {}),
      ...(deps.peers ? { crossSync: standaloneCrossSync(sync.name, deps.peers, this.registry) } : {}),
    };
    // Standalone, only validation rejects a revision: the one on record stays refused across restarts.
    this.shared = new SyncRun(run, this, store.status.rejectedRevision);
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

  /** This Sync as the others see it (references across Syncs). */
  asPeer(): SyncPeer {
    return {
      name: this.name,
      dependsOn: this.sync.dependsOn,
      owner: this.sync.owner,
      stateDir: this.stateDir,
      applied: async () => (await this.lastGoodRevision())?.validated.manifests,
    };
  }

  get status(): SyncStatus {
    return this.store.status;
  }

  /** A registry notification: the Images of this Sync's revisions (the last good one, the last applied) that follow one of the pushed tags. */
  imagesFollowing(pushes: readonly MovedTag[]): string[] {
    const revisions = [this.lastGood, this.latest].filter((r) => r !== undefined);
    return imagesFollowing(
      revisions.flatMap((r) => r.validated.manifests),
      pushes,
    );
  }

  /** A registry notification names these manifests: the next 'registry' run applies only them. */
  noteMoved(addresses: readonly string[]): void {
    for (const a of addresses) this.moved.add(a);
  }

  /** One run; true when the Sync ended converged on the newest revision. */
  async run(trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    const { lastAppliedRevision, lastGoodDir } = this.store.status;
    // A registry run with nothing named: a full run since the event resolved them already.
    if (trigger === 'registry' && this.moved.size === 0 && lastAppliedRevision && lastGoodDir) return true;
    // Taken whatever the trigger: a full run resolves them again too.
    const refresh: ReadonlySet<string> = new Set(this.moved);
    this.moved.clear();
    const since = Date.now();
    this.refresh = refresh;
    let ok = false;
    try {
      ok = await this.shared.run(trigger, signal);
      return ok;
    } finally {
      this.refresh = undefined;
      // What this run did not resolve again: the next run asks the registry for it again.
      if (!ok) for (const a of refresh) if (!this.deps.images.resolvedSince(a, since)) this.moved.add(a);
    }
  }

  acting(): boolean {
    return true;
  }

  upToDate(): boolean {
    return this.store.status.lastGoodDir !== undefined;
  }

  keep(revision: string, dir: string): Promise<string> {
    return this.snapshots.take(revision, dir);
  }

  async settled(dir: string): Promise<void> {
    await this.snapshots.keepOnly([this.store.status.lastGoodDir, dir]);
  }

  /** The standalone agent applies a fetched revision as new (not as drift): its fast pass compares it with the last good one. */
  async apply(rev: LoadedRevision, trigger: Trigger, signal: AbortSignal): Promise<SyncOutcome> {
    // Only a partial pass is ever skipped: a full one always comes to an outcome.
    return (
      (await this.applyLoaded(rev, trigger, signal, false)) ?? {
        result: 'Failed',
        revision: rev.revision,
        drift: false,
        reason: 'ApplyFailed',
        message: 'nothing was applied',
      }
    );
  }

  async applyLastGood(trigger: Trigger, signal: AbortSignal): Promise<SyncOutcome | undefined> {
    const rev = await this.lastGoodRevision();
    return rev && (await this.applyLoaded(rev, trigger, signal, true));
  }

  /** A rejection is counted like the engine's own (kupenstack_engine_events_total). */
  said(o: SyncOutcome): void {
    if (o.result !== 'Rejected') return;
    const lines = o.refusals;
    metricsSink(
      this.name,
      this.deps.metrics,
    )({
      type: 'rejected',
      address: o.revision,
      reason: 'ValidationFailed',
      message: `${lines.length} validation errors, the first: ${lines[0] ?? ''}; nothing was applied`,
      severity: 'warning',
      revision: o.revision,
      at: new Date().toISOString(),
    });
  }

  /**
   * A registry notification: the Images it named are resolved again and
   * applied from the last good revision, nothing else (no fetch, no other
   * kind, no prune); the full pass stays on the interval. Undefined when
   * there is nothing to do it with (no revision applied yet, or the revision
   * no longer declares them): the run is a full one.
   */
  async registryRun(signal: AbortSignal): Promise<SyncOutcome | undefined> {
    const only = [...(this.refresh ?? [])].sort();
    if (only.length === 0 || !this.store.status.lastAppliedRevision || !this.store.status.lastGoodDir) return undefined;
    const rev = await this.lastGoodRevision();
    return rev && (await this.applyLoaded(rev, 'registry', signal, true, only));
  }

  /** The last good revision: in memory since it was applied, or read once from its copy after a restart. */
  private async lastGoodRevision(): Promise<LoadedRevision | undefined> {
    const { lastGoodDir: dir, lastAppliedRevision: revision } = this.store.status;
    if (!dir || !revision) return undefined;
    if (this.lastGood?.dir === dir && this.lastGood.revision === revision) return this.lastGood;
    const check = await checkPath(dir, this.registry);
    if (check.diagnostics.length > 0) {
      this.log.warn({ revision, errors: check.diagnostics.length }, 'the last good revision no longer validates; not re-applied');
      return undefined;
    }
    this.lastGood = { revision, dir, validated: check.validated };
    return this.lastGood;
  }

  /** What the apply came to; undefined when a partial pass found nothing of its own to do. */
  private async applyLoaded(
    rev: LoadedRevision,
    trigger: Trigger,
    signal: AbortSignal,
    drift: boolean,
    only?: readonly string[],
  ): Promise<SyncOutcome | undefined> {
    this.latest = rev;
    let firstWrite = true;
    this.onWrite = (at) => {
      // The push-to-cloud latency ends here (benchmark and operators read this line).
      if (firstWrite) this.log.info({ revision: rev.revision, writeAtMs: at }, 'first OpenStack write of the run');
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
      registry: this.registry,
      secrets: this.deps.secrets,
      images: this.deps.images,
      ...(this.refresh && this.refresh.size > 0 ? { refresh: this.refresh } : {}),
      ...(this.deps.cloudStep ? { cloudStep: this.deps.cloudStep } : {}),
      ...(this.notices ? { notices: this.notices } : {}),
      ...(this.deps.peers && this.sync.dependsOn.length > 0 ? { dependencies: () => dependencyObjects(this.client(), this.name, this.deps.peers!()) } : {}),
    };
    // The fast pass compares with the last good revision, when it is another one.
    const base =
      !only && !drift && this.store.status.lastGoodDir !== undefined && this.store.status.lastGoodDir !== rev.dir
        ? (await this.lastGoodRevision())?.validated
        : undefined;
    const outcome = await applyStep(ctx, rev, trigger, signal, { drift, ...(only ? { only } : {}), ...(base ? { base } : {}) });
    if (outcome === 'skipped') return undefined;
    if (outcome.result !== 'Succeeded' && outcome.result !== 'Held') return outcome;
    // Applied: drift correction re-applies this copy, even after a bad revision was fetched.
    this.store.status.lastGoodDir = rev.dir;
    // A partial pass corrects no drift: the interval's full pass stays due.
    if (only) return outcome;
    this.lastGood = rev;
    this.reconciledOnce = true;
    return outcome;
  }

  /** One OpenStack client per Sync for the agent's life: tokens and the catalog are reused, calls are counted for /metrics. */
  private client(): OpenStackCloud {
    this.openstack ??= OpenStackCloud.fromCloudsYaml(
      this.deps.cloud,
      this.deps.cloudsFile,
      this.deps.metrics.countersFor(this.name, (at) => this.onWrite?.(at)),
    );
    return this.openstack;
  }
}
