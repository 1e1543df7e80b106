import { bounds, deadlineSignal, runDeadlineExceeded } from '../util/bounds.ts';
import type { KupenstackConfig } from '../sync/config-file.ts';
import { ImageMemory } from '../kinds/kit/image-memory.ts';
import { dependencyWait, type DependencyState } from '../sync/depends-on.ts';
import type { SyncConfig } from '../sync/settings.ts';
import { reasons } from '../sync/conditions.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { Source } from '../source/source.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import type { CloudStepOptions } from './revision-cloud.ts';
import { Scheduler, type Trigger } from '../sync/scheduler.ts';
import { SyncRunner } from './sync-runner.ts';
import type { SyncPeer } from './cross-sync.ts';

export interface AgentOptions {
  config: KupenstackConfig;
  cloud: string;
  cloudsFile?: string;
  logger: Logger;
  metrics: AgentMetrics;
  createSource: (sync: SyncConfig) => Promise<Source>;
  /** Webhook secrets, Git credentials and trusted keys are read through it when used. */
  secrets: SecretResolver;
  onWrite?: (sync: string, at: number) => void;
  /** Drive the OpenStackCloud a revision declares in this cluster before its resources (`agent --kubeconfig`). */
  cloudStep?: CloudStepOptions;
}

export interface SyncHandle {
  sync: SyncConfig;
  runner: SyncRunner;
  scheduler: Scheduler;
  source: Source;
  stopWatch?: () => void;
}

export interface Readiness {
  ready: boolean;
  /** Per Sync: why it is not ready yet (empty when ready). */
  syncs: Record<string, { ready: boolean; reason: string; message: string }>;
}

/**
 * Several Syncs in one process, isolated: each has its own source, owner,
 * state dir, clock and status, and an error in one never reaches another.
 */
export class Agent {
  readonly handles: Map<string, SyncHandle>;
  readonly secrets: SecretResolver;
  /** What the Image kind remembers between runs, shared by every Sync (resolutions, registry clients). */
  readonly images: ImageMemory;
  private readonly logger: Logger;

  private constructor(handles: Map<string, SyncHandle>, secrets: SecretResolver, logger: Logger, images: ImageMemory) {
    this.handles = handles;
    this.secrets = secrets;
    this.logger = logger;
    this.images = images;
  }

  static async create(opts: AgentOptions): Promise<Agent> {
    const handles = new Map<string, SyncHandle>();
    // The Syncs as each other sees them (references across Syncs); filled as they are made, read only when they run.
    const peers = new Map<string, SyncPeer>();
    const images = new ImageMemory();
    for (const sync of opts.config.syncs ?? []) {
      const source = await opts.createSource(sync);
      const runner = await SyncRunner.create(sync, {
        config: opts.config,
        cloud: opts.cloud,
        cloudsFile: opts.cloudsFile,
        source,
        logger: opts.logger,
        metrics: opts.metrics,
        secrets: opts.secrets,
        images,
        peers: () => peers,
        ...(opts.cloudStep ? { cloudStep: opts.cloudStep } : {}),
        onWrite: opts.onWrite ? (at) => opts.onWrite!(sync.name, at) : undefined,
      });
      const log = opts.logger.child({ sync: sync.name });
      const scheduler = new Scheduler(
        sync,
        (trigger, signal) => runAfterDependencies(handles, sync, runner, log, trigger, signal),
        (err) => log.error({ error: err instanceof Error ? err.message : String(err) }, 'run failed unexpectedly'),
      );
      handles.set(sync.name, { sync, runner, scheduler, source });
      peers.set(sync.name, runner.asPeer());
    }
    return new Agent(handles, opts.secrets, opts.logger, images);
  }

  start(): void {
    for (const h of this.handles.values()) {
      if (h.sync.suspend) {
        this.logger.info({ sync: h.sync.name }, 'suspended: not fetching, not applying');
        continue;
      }
      this.logger.info({ sync: h.sync.name, source: h.source.description, interval: h.sync.intervalMs / 1000, schedule: h.sync.schedule }, 'starting');
      h.scheduler.start();
      if (h.source.watch) h.stopWatch = h.source.watch(() => h.scheduler.trigger('watch'));
    }
  }

  trigger(name: string, trigger: Trigger): boolean {
    return this.handles.get(name)?.scheduler.trigger(trigger) ?? false;
  }

  /** Ready once every Sync that is not suspended has applied a revision since the agent started. */
  readiness(): Readiness {
    const syncs: Readiness['syncs'] = {};
    for (const h of this.handles.values()) {
      const ready = h.sync.suspend || h.runner.reconciledOnce;
      const cond = h.runner.status.conditions.find((c) => c.type === 'Ready');
      syncs[h.sync.name] = ready
        ? {
            ready,
            reason: h.sync.suspend ? 'Suspended' : 'Reconciled',
            message: h.sync.suspend ? 'suspended' : `applied ${h.runner.status.lastAppliedRevision ?? ''}`,
          }
        : {
            ready,
            reason: cond?.reason ?? 'Pending',
            message:
              h.runner.store.status.history.length === 0 && cond?.reason === 'Pending'
                ? 'no reconcile finished yet'
                : (cond?.message ?? 'no reconcile finished yet'),
          };
    }
    return { ready: Object.values(syncs).every((s) => s.ready), syncs };
  }

  /** One run of every Sync that is not suspended (`--once`), each after the Syncs it depends on; true when all converged. */
  async once(signal: AbortSignal): Promise<boolean> {
    const runs = new Map<string, Promise<boolean>>();
    const runOf = (h: SyncHandle): Promise<boolean> => {
      const known = runs.get(h.sync.name);
      if (known) return known;
      const p = (async () => {
        // Cycles were refused when kupenstack.yaml was read, so this recursion ends.
        const deps = await Promise.all(
          h.sync.dependsOn.map((d) => this.handles.get(d)).map((d) => (d && !d.sync.suspend ? runOf(d) : Promise.resolve(d !== undefined))),
        );
        if (!deps.every(Boolean)) {
          this.logger.error({ sync: h.sync.name, dependsOn: h.sync.dependsOn }, 'not run: a Sync it depends on did not converge');
          return false;
        }
        const s = AbortSignal.any([signal, AbortSignal.timeout(h.sync.timeoutMs)]);
        try {
          return await h.runner.run('startup', s);
        } catch (err) {
          this.logger.error({ sync: h.sync.name, error: err instanceof Error ? err.message : String(err) }, 'run failed unexpectedly');
          return false;
        }
      })();
      runs.set(h.sync.name, p);
      return p;
    };
    const results = await Promise.all([...this.handles.values()].filter((h) => !h.sync.suspend).map(runOf));
    return results.every(Boolean);
  }

  /** Stops the clocks, lets current runs finish within graceMs, then aborts them at a safe point; closes the sources. */
  async stop(graceMs: number): Promise<void> {
    await Promise.all(
      [...this.handles.values()].map(async (h) => {
        h.stopWatch?.();
        await h.scheduler.stop(graceMs);
        await h.source.close().catch(() => {});
      }),
    );
  }

  /** Second signal: abort whatever runs now. */
  abort(): void {
    for (const h of this.handles.values()) h.scheduler.abort();
  }
}

/** What runAfterDependencies reads of the other Syncs: their status, and their clock to wake them. */
export interface DependencyHandle {
  sync: Pick<SyncConfig, 'name' | 'dependsOn'>;
  runner: Pick<SyncRunner, 'status'>;
  scheduler: Pick<Scheduler, 'trigger'>;
}

/**
 * dependsOn in the standalone agent (the cluster's twin is in
 * controller/syncs/sync-loop.ts): a Sync runs once each Sync it depends on is Ready at
 * its newest revision; until then its status says what it waits for. A run
 * of a dependency wakes the Syncs that wait for it. Cycles and unknown names
 * were refused when kupenstack.yaml was read.
 */
export async function runAfterDependencies(
  handles: ReadonlyMap<string, DependencyHandle>,
  sync: Pick<SyncConfig, 'name' | 'dependsOn'>,
  runner: Pick<SyncRunner, 'store' | 'run'>,
  log: Pick<Logger, 'info' | 'warn'>,
  trigger: Trigger,
  signal: AbortSignal,
): Promise<boolean> {
  const why = sync.dependsOn.map((d) => dependencyWait(d, stateOf(handles.get(d)))).find((w) => w !== undefined);
  if (why !== undefined) {
    runner.store.condition('Ready', 'False', reasons.dependencyNotReady, `waiting: ${why}`);
    runner.store.condition('Reconciling', 'False', reasons.dependencyNotReady, `waiting: ${why}`);
    await runner.store.save();
    log.info({ trigger, reason: reasons.dependencyNotReady }, `waiting: ${why}`);
    return false;
  }
  // One Sync's run is bounded (--run-deadline) whatever its own timeout: cut at a safe point, retried with backoff.
  const deadline = deadlineSignal(bounds().runDeadlineMs, () => runDeadlineExceeded(`Sync ${sync.name}`, bounds().runDeadlineMs));
  let ok: boolean;
  try {
    ok = await runner.run(trigger, AbortSignal.any([signal, deadline.signal]));
  } finally {
    deadline.clear();
  }
  if (deadline.signal.aborted) log.warn({ trigger, reason: 'BoundExceeded' }, (deadline.signal.reason as Error).message);
  for (const other of handles.values()) if (other.sync.dependsOn.includes(sync.name)) other.scheduler.trigger('dependency');
  return ok;
}

function stateOf(h: DependencyHandle | undefined): DependencyState | undefined {
  if (!h) return undefined;
  const ready = h.runner.status.conditions.find((c) => c.type === 'Ready');
  return {
    ready: ready ? { status: ready.status, reason: ready.reason, message: ready.message } : undefined,
    lastFetchedRevision: h.runner.status.lastFetchedRevision,
    lastAppliedRevision: h.runner.status.lastAppliedRevision,
  };
}
