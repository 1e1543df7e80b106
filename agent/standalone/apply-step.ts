import type { ApplyReport } from '../act/apply.ts';
import { applyChanged, applySubset, applyValidated } from './apply-path.ts';
import type { AgentConfig } from '../config/config.ts';
import type { SyncConfig } from '../sync/settings.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { ImageMemory } from '../kinds/kit/image-memory.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import { metricsSink } from '../telemetry/event-sinks.ts';
import { fanOut, type EventSink } from '../events/events.ts';
import { abortReason, asError } from '../sync/fetch-step.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { resourceCounts } from './resource-counts.ts';
import { cloudNotReady, driveRevisionCloud, type CloudStepOptions } from './revision-cloud.ts';
import type { Trigger } from '../sync/scheduler.ts';
import type { RunResult, SyncStatusStore } from '../sync/status.ts';
import type { LoadedRevision } from '../sync/sync-run.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { applyFailed, held, progressing, succeeded } from '../sync/conditions.ts';

export interface ApplyStepContext {
  sync: SyncConfig;
  /** This Sync's applies: its own owner, project prefix and state dir. */
  config: AgentConfig;
  store: SyncStatusStore;
  log: Logger;
  metrics: AgentMetrics;
  cloud: string;
  cloudsFile?: string;
  openstack: OpenStackCloud;
  registry: SchemaRegistry;
  /** Manifests' secret references (userDataSecretRef, credentialsSecretRef) are read through it. */
  secrets: SecretResolver;
  /** Drive the OpenStackCloud the revision declares before its resources (`agent --kubeconfig`). */
  cloudStep?: CloudStepOptions;
  /** What the Image kind remembers between runs: the agent's one object. */
  images: ImageMemory;
  /** Images a registry notification moved (the Sync runner's record): every pass of this step resolves them again. */
  refresh?: ReadonlySet<string>;
  /** Engine events for the Sync's notify targets (drift corrected, healed, a new image version): object-notice.ts picks. */
  notices?: EventSink;
  /** The run's record in the Sync's history (the shared Sync run's). */
  record: (started: number, revision: string, trigger: Trigger, result: RunResult, message?: string, counts?: Record<string, number>) => void;
}

export type ApplyResult = 'applied' | 'failed';

export interface ApplyStepOptions {
  drift: boolean;
  /** Only these manifests (a registry notification's Images): no fast pass, no prune; 'skipped' when the revision holds none of them. */
  only?: readonly string[];
  /** The last good revision, as loaded: the fast pass applies what changed since it first. */
  base?: ValidatedRevision;
}

/**
 * The standalone apply step (Flux's kustomize side): apply one validated
 * revision with the source's revision string, record the run, and turn the
 * outcome into Ready/Stalled. `drift` runs re-apply the last good revision;
 * they never hide why the newest revision was rejected. One function (~115
 * lines): the cloud step, the fast pass and the full pass share the run's
 * record and conditions.
 */
export async function applyStep(ctx: ApplyStepContext, rev: LoadedRevision, trigger: Trigger, signal: AbortSignal, opts: ApplyStepOptions): Promise<ApplyResult | 'skipped'> {
  const st = ctx.store;
  const { revision } = rev;
  const input = { revision, validated: rev.validated };
  const started = Date.now();
  const only = opts.only;
  progressing(st, only ? `resolving ${only.join(', ')} again at ${revision}` : `${opts.drift ? 'correcting drift with' : 'applying'} ${revision}`);
  await st.save();
  if (only) ctx.log.info({ revision, trigger, only }, 'applying only what the event names');
  else ctx.log.info({ revision, trigger, drift: opts.drift }, opts.drift ? 'correcting drift' : 'applying revision');
  const how = {
    cloud: ctx.cloud,
    cloudsFile: ctx.cloudsFile,
    config: ctx.config,
    prune: false,
    allowMassDelete: false,
    // The engine's text lines stay the log (operators and tests read them); metrics count its typed events.
    log: (line: string) => ctx.log.info({ revision }, line.replace(/\s+/, ' ')),
    events: ctx.notices ? fanOut(metricsSink(ctx.sync.name, ctx.metrics), ctx.notices) : metricsSink(ctx.sync.name, ctx.metrics),
    secrets: ctx.secrets,
    signal,
    registry: ctx.registry,
    openstack: ctx.openstack,
    images: ctx.images,
    ...(ctx.refresh ? { refresh: ctx.refresh } : {}),
  };
  // The cloud first (full passes, drift ones too: they correct the cloud's drift): its resources wait for it to be Ready.
  if (!only && ctx.cloudStep) {
    let waiting: string | undefined;
    try {
      const declared = await driveRevisionCloud(rev, ctx.cloudStep, (line) => ctx.log.info({ revision }, line), signal);
      if (declared?.driven && !declared.driven.ready) waiting = cloudNotReady(declared);
    } catch (err) {
      waiting = `OpenStackCloud: ${asError(err, signal).message}`;
    }
    if (waiting) {
      ctx.log.warn({ revision }, waiting);
      ctx.record(started, revision, trigger, 'Failed', waiting);
      applyFailed(st, 'CloudNotReady', `${revision}: ${waiting}`);
      return 'failed';
    }
  }
  /** What the fast pass wrote: part of this run's counts (the full pass then finds those objects unchanged). */
  let fastWrites = { created: 0, updated: 0, replaced: 0 };
  if (!only && !opts.drift && opts.base) {
    // Sub-second push: what changed since the last applied revision first, then the full pass below (prune, drift).
    try {
      const fast = await applyChanged(input, opts.base, how);
      if ('skipped' in fast) ctx.log.debug({ revision, reason: fast.skipped }, 'fast pass skipped');
      else {
        ctx.log.info(
          { revision, changed: fast.changed, created: fast.report.created, updated: fast.report.updated, replaced: fast.report.replaced, errors: fast.report.errors.length },
          'fast pass applied the changed manifests',
        );
        fastWrites = { created: fast.report.created, updated: fast.report.updated, replaced: fast.report.replaced };
      }
    } catch (err) {
      // The full pass does it all again and reports what is wrong.
      ctx.log.warn({ revision, error: asError(err, signal).message }, 'fast pass failed; the full pass follows');
    }
  }
  let r: ApplyReport;
  try {
    if (only) {
      const subset = await applySubset(input, only, how);
      if ('skipped' in subset) {
        ctx.log.info({ revision, trigger, reason: subset.skipped }, 'partial pass skipped');
        return 'skipped';
      }
      r = subset.report;
    } else r = await applyValidated(input, { ...how, prune: ctx.sync.prune });
  } catch (err) {
    const e = asError(err, signal);
    const reason = signal.aborted ? abortReason(signal) : 'ApplyFailed';
    ctx.log.error({ revision, reason, error: e.message }, 'apply failed');
    ctx.record(started, revision, trigger, 'Failed', e.message);
    if (!opts.drift || st.get('Ready')?.status === 'True') applyFailed(st, reason, `${revision}: ${e.message}`);
    return 'failed';
  }

  const fastWritten = fastWrites.created + fastWrites.updated + fastWrites.replaced;
  const counts = {
    created: r.created + fastWrites.created,
    updated: r.updated + fastWrites.updated,
    replaced: r.replaced + fastWrites.replaced,
    deleted: r.deleted,
    healed: r.healed,
    unchanged: Math.max(0, r.unchanged - fastWritten),
    failed: r.errors.length,
  };
  // A partial pass counts only its part: the gauges keep the last full pass's totals.
  if (!only) ctx.metrics.setResources(ctx.sync.name, resourceCounts(r));
  const summary = `${counts.created} created, ${counts.updated} updated, ${counts.replaced} replaced, ${counts.deleted} deleted, ${counts.healed} healed, ${counts.unchanged} unchanged`;
  if (r.errors.length > 0) {
    const message = `${r.errors.length} errors applying ${revision}: ${r.errors.slice(0, 3).map((e) => e.message).join('; ')}`;
    ctx.log.error({ revision, ...counts }, message);
    ctx.record(started, revision, trigger, 'Failed', message, counts);
    if (!st.status.rejectedRevision || !opts.drift) applyFailed(st, 'ApplyFailed', message);
    return 'failed';
  }

  st.status.lastAppliedRevision = revision;
  st.status.lastGoodDir = rev.dir;
  ctx.metrics.setLastApplied(ctx.sync.name, revision);
  const isHeld = r.held.length > 0;
  ctx.record(started, revision, trigger, isHeld ? 'Held' : 'Succeeded', isHeld ? `${r.held.length} deletions held by the mass-delete guard` : summary, counts);
  ctx.log.info({ revision, trigger, ...counts, durationMs: Date.now() - started }, isHeld ? 'applied, deletions held' : 'applied');
  if (!opts.drift) {
    st.status.rejectedRevision = undefined;
    st.status.rejectedBecause = undefined;
  }
  if (st.status.rejectedRevision) return 'applied'; // the newest revision is still rejected: its conditions stay.
  if (isHeld) held(st, revision, r.held.length);
  else succeeded(st, revision, summary);
  return 'applied';
}
