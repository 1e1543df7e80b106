import type { ApplyReport, RevisionInput } from '../act/apply.ts';
import type { DependencyObjects } from '../act/dependencies.ts';
import { applyChanged, applySubset, applyValidated, type StandaloneOptions } from './apply-path.ts';
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
import type { SyncStatusStore } from '../sync/status.ts';
import type { SyncOutcome } from '../sync/outcome.ts';
import type { LoadedRevision } from '../sync/sync-run.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { progressing } from '../sync/conditions.ts';

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
  /** What the Syncs this one depends on made (references across Syncs), read at each apply. */
  dependencies?: () => Promise<DependencyObjects | undefined>;
}

export interface ApplyStepOptions {
  drift: boolean;
  /** Only these manifests (a registry notification's Images): no fast pass, no prune; 'skipped' when the revision holds none of them. */
  only?: readonly string[];
  /** The last good revision, as loaded: the fast pass applies what changed since it first. */
  base?: ValidatedRevision;
}

type Writes = Pick<ApplyReport, 'created' | 'updated' | 'replaced'>;

/**
 * The standalone apply step (Flux's kustomize side): apply one validated
 * revision with the source's revision string and say what it came to; the
 * Sync run records it. `drift` runs re-apply the last good revision. The
 * cloud first, then the fast pass (what changed), then the full pass.
 */
export async function applyStep(
  ctx: ApplyStepContext,
  rev: LoadedRevision,
  trigger: Trigger,
  signal: AbortSignal,
  opts: ApplyStepOptions,
): Promise<SyncOutcome | 'skipped'> {
  const { revision } = rev;
  const { drift, only } = opts;
  const input = { revision, validated: rev.validated };
  const failed = (reason: string, message: string, counts?: Record<string, number>): SyncOutcome => ({
    result: 'Failed',
    revision,
    drift,
    reason,
    message,
    ...(counts ? { counts } : {}),
  });
  progressing(ctx.store, only ? `resolving ${only.join(', ')} again at ${revision}` : `${drift ? 'correcting drift with' : 'applying'} ${revision}`);
  await ctx.store.save();
  if (only) ctx.log.info({ revision, trigger, only }, 'applying only what the event names');
  else ctx.log.info({ revision, trigger, drift }, drift ? 'correcting drift' : 'applying revision');
  const how = engineOptions(ctx, revision, signal);
  const provided = await ctx.dependencies?.();
  if (provided) how.dependencies = provided;
  // The cloud first (full passes, drift ones too: they correct the cloud's drift): its resources wait for it to be Ready.
  if (!only && ctx.cloudStep) {
    const waiting = await cloudFirst(ctx, rev, signal);
    if (waiting) return failed('CloudNotReady', waiting);
  }
  // Sub-second push: what changed since the last applied revision first, then the full pass below (prune, drift).
  const fast = !only && !drift && opts.base ? await fastPass(ctx, input, opts.base, how, signal) : { created: 0, updated: 0, replaced: 0 };
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
    return failed(signal.aborted ? abortReason(signal) : 'ApplyFailed', asError(err, signal).message);
  }
  // What the fast pass wrote counts in this run (the full pass then found those objects unchanged).
  const fastWritten = fast.created + fast.updated + fast.replaced;
  const counts = {
    created: r.created + fast.created,
    updated: r.updated + fast.updated,
    replaced: r.replaced + fast.replaced,
    deleted: r.deleted,
    healed: r.healed,
    unchanged: Math.max(0, r.unchanged - fastWritten),
    failed: r.errors.length,
  };
  // A partial pass counts only its part: the gauges keep the last full pass's totals.
  if (!only) ctx.metrics.setResources(ctx.sync.name, resourceCounts(r));
  if (r.errors.length > 0)
    return failed(
      'ApplyFailed',
      `${r.errors.length} errors: ${r.errors
        .slice(0, 3)
        .map((e) => e.message)
        .join('; ')}`,
      counts,
    );
  if (r.held.length > 0) return { result: 'Held', revision, drift, counts, held: r.held.length };
  const summary = `${counts.created} created, ${counts.updated} updated, ${counts.replaced} replaced, ${counts.deleted} deleted, ${counts.healed} healed, ${counts.unchanged} unchanged`;
  return { result: 'Succeeded', revision, drift, counts, summary };
}

/** The engine's options of one run of this Sync. */
function engineOptions(ctx: ApplyStepContext, revision: string, signal: AbortSignal): StandaloneOptions {
  return {
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
}

/** The OpenStackCloud the revision declares: why its resources cannot go yet, or undefined when they can. */
async function cloudFirst(ctx: ApplyStepContext, rev: LoadedRevision, signal: AbortSignal): Promise<string | undefined> {
  try {
    const declared = await driveRevisionCloud(rev, ctx.cloudStep!, (line) => ctx.log.info({ revision: rev.revision }, line), signal);
    return declared?.driven && !declared.driven.ready ? cloudNotReady(declared) : undefined;
  } catch (err) {
    return `OpenStackCloud: ${asError(err, signal).message}`;
  }
}

/** The manifests changed since `base`, applied first; what it wrote (nothing when it was skipped or failed: the full pass does it all again). */
async function fastPass(ctx: ApplyStepContext, input: RevisionInput, base: ValidatedRevision, how: StandaloneOptions, signal: AbortSignal): Promise<Writes> {
  const { revision } = input;
  try {
    const fast = await applyChanged(input, base, how);
    if ('skipped' in fast) {
      ctx.log.debug({ revision, reason: fast.skipped }, 'fast pass skipped');
      return { created: 0, updated: 0, replaced: 0 };
    }
    const { created, updated, replaced } = fast.report;
    ctx.log.info({ revision, changed: fast.changed, created, updated, replaced, errors: fast.report.errors.length }, 'fast pass applied the changed manifests');
    return { created, updated, replaced };
  } catch (err) {
    // The full pass does it all again and reports what is wrong.
    ctx.log.warn({ revision, error: asError(err, signal).message }, 'fast pass failed; the full pass follows');
    return { created: 0, updated: 0, replaced: 0 };
  }
}
