import { annotatedProjects } from './project-names.ts';
import type { DependencyObjects } from './dependencies.ts';
import type { AgentConfig } from '../config/config.ts';
import { KupenstackError } from '../errors.ts';
import type { EventSink } from '../events/events.ts';
import { kindDependencies, kindOrder } from '../graph/kind-order.ts';
import { adapters } from '../kinds/registry.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import type { ImageMemory } from '../kinds/kit/image-memory.ts';
import { decide, planErrorMessage, type Decision } from '../plan/decide.ts';
import { observedHash, StalePlanError, compareObserved, type ObservedState } from '../plan/observed.ts';
import type { Change, Drift, Held, ImageResolution, Plan } from '../plan/plan.ts';
import { jsonPlan } from '../plan/render/json.ts';
import { compareChanges } from '../plan/saved.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { describeSecret, type SecretResolver } from '../secrets/resolver.ts';
import type { CreateJournal } from '../status/create-journal.ts';
import type { ResourceStatus, StateStore } from '../status/store.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { execute } from './execute.ts';
import { afterLanding } from './landing.ts';
import type { ApplyError, ExecuteOptions, KindCounts, RunCounts } from './run.ts';
import { observe, type Observation } from './observe.ts';
import type { Progress, Progressing } from './progress.ts';

/** One revision of the desired state: the source's revision string and its validated manifests. */
export interface RevisionInput {
  revision: string;
  validated: ValidatedRevision;
}

export interface EngineDeps {
  cloud: OpenStackCloud;
  registry: SchemaRegistry;
  config: AgentConfig;
  state: StateStore;
  /** Creates in flight, for the process that comes after a kill (standalone: a file beside the state). */
  journal?: CreateJournal;
  events: EventSink;
  secrets: SecretResolver;
  counters?: ApiCounters;
  signal?: AbortSignal;
  /** Only these namespaces' projects are observed, planned and pruned (the in-cluster controller reconciles one namespace at a time). Absent = every owned project. */
  namespaces?: string[];
  /** What the Image kind remembers between runs: one per front end (a one-shot apply, the agent, the controller's leadership). */
  images?: ImageMemory;
  /**
   * Images (addresses) a registry notification moved: resolved again whatever
   * their interval, once for all passes handed this same set. The front end's
   * record of what moved (the standalone Sync runner's, the controller's) is the only one.
   */
  refresh?: ReadonlySet<string>;
  /** Told as the engine ends a step ('observed', 'planned'): the controller's `timing` line. */
  step?: (what: string) => void;
  /**
   * Standalone: a namespace's manifests may name its existing Keystone project (annotation `kupenstack.io/project`,
   * written by export; act/project-names.ts). Off in the controller: a tenant's custom resource must not claim a project.
   */
  annotatedProjects?: boolean;
  /** Namespaces labelled kupenstack.io/admin=true (the controller's): their imports keep the admin's reach; every other namespace imports and adopts only what its project owns (act/imports.ts). */
  adminNamespaces?: ReadonlySet<string>;
  /** Standalone: what the Syncs this one depends on made, so its references to their objects resolve (act/dependencies.ts). */
  dependencies?: DependencyObjects;
}

export interface EngineOptions {
  prune: boolean;
  allowMassDelete: boolean;
  /** A fast pass over part of a revision (applyChangedPath): not recorded as a run of the revision; the full pass that follows is. */
  partial?: boolean;
  /** Progress by requeue (the controller's queue): objects OpenStack is still working on are reported in `progressing`, not waited for. */
  requeue?: boolean;
}

/** A live plan, plus what a saved plan and the CLI need: what it was compared with, and what could not be planned. */
export interface PlannedRevision extends Plan {
  /** Per address, a hash of the observed object: `apply --plan` refuses once OpenStack no longer looks like this. */
  observed: ObservedState;
  errors: ApplyError[];
  apiCalls: { read: number; write: number };
}

export interface ApplyReport extends RunCounts {
  revision: string;
  held: Held[];
  errors: ApplyError[];
  apiCalls: { read: number; write: number };
  drift: Drift[];
  warnings: string[];
  /** The plan's changes this run executed. */
  changes: Change[];
  /** Moving references (OCI tags) that point elsewhere than the object in use. */
  images: ImageResolution[];
  /** The observed objects this run compared with. */
  observed: ObservedState;
  /** The same counts per kind (metrics, status). */
  kinds: Record<string, KindCounts>;
  /** Objects OpenStack is still working on (requeue mode): look again after the soonest `afterMs`. */
  progressing: Progressing[];
  /** The whole run held (requeue mode: creates a dead process sent are still landing): nothing ran, the queue looks again after `afterMs`. */
  waiting?: Progress;
}

/** Where no secret can be read (a caller that gave no resolver): a manifest that names one fails with the reference, never a value. */
export const noSecrets: SecretResolver = {
  get: (ref) => Promise.reject(new KupenstackError('secret.unavailable', `${describeSecret(ref)} cannot be read here: no secret resolver is configured`)),
};

/** What the live cloud holds for this revision, then the plan: read-only (no project is created either). */
export async function planRevision(input: RevisionInput, deps: EngineDeps, opts: EngineOptions): Promise<PlannedRevision> {
  const before = calls(deps.cloud);
  const { seen, decision } = await observeAndDecide(input, deps, opts, (await deps.state.load()).resources);
  return {
    ...decision.plan,
    observed: observedOf(seen),
    errors: decision.errors.map((e) => applyError(e.address, e.error)),
    apiCalls: since(deps.cloud, before),
  };
}

/**
 * Makes OpenStack equal to one revision: observe, decide, execute. With
 * `opts.plan` (a saved plan) the fresh decision must equal it — same observed
 * objects, same changes — or nothing is written (Terraform's "inconsistent
 * final plan"). State goes through `deps.state`, progress through `deps.events`.
 */
export async function applyRevision(
  input: RevisionInput,
  deps: EngineDeps,
  opts: EngineOptions & { plan?: Plan & { observed?: ObservedState } },
): Promise<ApplyReport> {
  const started = new Date();
  const before = calls(deps.cloud);
  const stored = await deps.state.load();
  const resources = stored.resources;
  const landing = await landed(input, deps, opts, resources);
  // Requeue mode: creates a dead process sent are still landing; nothing is executed, the queue looks again.
  if ('waiting' in landing) return landingReport(input.revision, landing.waiting, since(deps.cloud, before));
  const { seen, decision } = landing;
  const observed = observedOf(seen);
  if (opts.plan) refuseStalePlan(opts.plan, input, observed, decision);
  if (decision.plan.held.length > 0)
    deps.events({
      type: 'held',
      address: input.revision,
      reason: 'MassDeleteGuard',
      message: `${decision.plan.held.length} deletions (mass-delete guard)`,
      severity: 'warning',
      revision: input.revision,
      at: new Date().toISOString(),
    });
  const out = await execute(input.validated, decision, seen, executeOptions(input, deps, opts, resources));
  for (const m of decision.declared)
    if (!out.kinds[m.kind]) out.kinds[m.kind] = { created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, errors: 0 };
  const report: ApplyReport = {
    revision: input.revision,
    created: out.created,
    updated: out.updated,
    replaced: out.replaced,
    deleted: out.deleted,
    healed: out.healed,
    unchanged: out.unchanged,
    held: decision.plan.held,
    errors: out.errors,
    apiCalls: since(deps.cloud, before),
    drift: out.drift,
    warnings: [...out.warnings, ...warningsOf(seen)],
    changes: decision.plan.changes,
    images: out.images,
    observed,
    kinds: out.kinds,
    progressing: out.progressing,
  };
  if (!opts.partial) await recordRun(deps, report, started);
  return report;
}

/** A saved plan runs only against what it was made from: the same revision, the same observed objects, the same changes. */
function refuseStalePlan(plan: Plan & { observed?: ObservedState }, input: RevisionInput, observed: ObservedState, decision: Decision): void {
  if (plan.revision !== input.revision) throw new StalePlanError([`the manifests are ${input.revision}, the plan was made for ${plan.revision}`]);
  const differences = [...(plan.observed ? compareObserved(plan.observed, observed) : []), ...compareChanges(jsonPlan(plan), jsonPlan(decision.plan))];
  if (differences.length > 0) throw new StalePlanError(differences);
}

/** The executor's options: the config's, this revision's, and what a partial (controller) run leaves to others. */
function executeOptions(input: RevisionInput, deps: EngineDeps, opts: EngineOptions, resources: Record<string, ResourceStatus>): ExecuteOptions {
  return {
    cloud: deps.cloud,
    adapters,
    kindOrder: kindOrder(deps.registry),
    kindDeps: kindDependencies(deps.registry),
    owner: deps.config.owner,
    projectPrefix: deps.config.projectPrefix,
    domainId: deps.config.domain,
    role: deps.config.role,
    revision: input.revision,
    concurrency: deps.config.concurrency,
    readyTimeoutMs: deps.config.readyTimeoutSeconds * 1000,
    ...(opts.requeue ? { requeue: true } : {}),
    transientRetries: 4,
    resources,
    state: deps.state,
    journal: deps.journal,
    events: deps.events,
    signal: deps.signal,
    // Standalone: a namespace that leaves the revision leaves OpenStack. The controller (one namespace at a time) deletes projects with their namespace.
    deleteEmptyProjects: opts.prune && !opts.partial && deps.namespaces === undefined,
    trustKnownProjects: opts.partial === true,
  };
}

/** The run's record in the state (a full run only): its result and counts. */
async function recordRun(deps: EngineDeps, report: ApplyReport, started: Date): Promise<void> {
  await deps.state.finishRun({
    revision: report.revision,
    startedAt: started.toISOString(),
    durationMs: Date.now() - started.getTime(),
    result: report.errors.length ? 'failed' : report.held.length ? 'held' : 'applied',
    counts: {
      created: report.created,
      updated: report.updated,
      replaced: report.replaced,
      deleted: report.deleted,
      healed: report.healed,
      unchanged: report.unchanged,
      errors: report.errors.length,
    },
  });
}

/** Observe and decide once the creates a dead process sent have landed (act/landing.ts); in requeue mode it answers waiting while they land. */
function landed(
  input: RevisionInput,
  deps: EngineDeps,
  opts: EngineOptions,
  res: Record<string, ResourceStatus>,
): Promise<{ seen: Observation; decision: Decision } | { waiting: Progress }> {
  return afterLanding({
    journal: deps.journal,
    declared: new Set(input.validated.manifests.map((m) => m.address)),
    look: async () => {
      const result = await observeAndDecide(input, deps, opts, res);
      return { result, owned: new Set(result.seen.inventory.owned.keys()) };
    },
    events: deps.events,
    revision: input.revision,
    signal: deps.signal,
    ...(opts.requeue ? { requeue: true } : {}),
  });
}

async function observeAndDecide(
  input: RevisionInput,
  deps: EngineDeps,
  opts: EngineOptions,
  res: Record<string, ResourceStatus>,
): Promise<{ seen: Observation; decision: Decision }> {
  const seen = await observe(input.validated.manifests, {
    cloud: deps.cloud,
    adapters,
    owner: deps.config.owner,
    projectPrefix: deps.config.projectPrefix,
    prune: opts.prune,
    concurrency: deps.config.concurrency,
    resources: res,
    namespaces: deps.namespaces,
    secrets: deps.secrets,
    imageVerify: deps.config.imageVerify,
    signal: deps.signal,
    trustKnownProjects: opts.partial === true,
    ...(deps.images ? { images: deps.images } : {}),
    ...(deps.refresh ? { refresh: deps.refresh } : {}),
    ...(deps.annotatedProjects ? { projectNames: annotatedProjects(input.validated.manifests) } : {}),
    ...(deps.adminNamespaces ? { adminNamespaces: deps.adminNamespaces } : {}),
    ...(deps.dependencies ? { dependencies: deps.dependencies } : {}),
  });
  deps.step?.('observed');
  const decision = await decide(input.validated, seen.inventory, {
    adapters,
    revision: input.revision,
    against: `cloud ${deps.config.cloud}`,
    prune: opts.prune,
    allowMassDelete: opts.allowMassDelete,
    massDeleteThreshold: deps.config.massDeleteThreshold / 100,
  });
  decision.plan.warnings.unshift(...warningsOf(seen));
  deps.step?.('planned');
  return { seen, decision };
}

/** Extra objects carrying one marker: the planner deletes them; the user hears why. */
function warningsOf(seen: Observation): string[] {
  return seen.inventory.duplicates.map(
    (d) =>
      `${d.address}: more than one OpenStack object carries this marker (${d.remote.id} besides ${seen.inventory.owned.get(d.address)?.id ?? '?'}); the extra one is pruned`,
  );
}

function observedOf(seen: Observation): ObservedState {
  const out: ObservedState = {};
  for (const [address, remote] of seen.inventory.owned) out[address] = observedHash(remote);
  for (const [address, remote] of seen.inventory.imports) out[address] = observedHash(remote);
  return out;
}

function applyError(address: string, error: unknown): ApplyError {
  const { code, message } = planErrorMessage({ address, error });
  return { address, code, message: `${address}: ${message}` };
}

const calls = (cloud: OpenStackCloud): { read: number; write: number } => ({ read: cloud.counters.read, write: cloud.counters.write });
const since = (cloud: OpenStackCloud, before: { read: number; write: number }): { read: number; write: number } => ({
  read: cloud.counters.read - before.read,
  write: cloud.counters.write - before.write,
});

/** A run that executed nothing because a dead process's creates are still landing: held whole. */
function landingReport(revision: string, waiting: Progress, apiCalls: { read: number; write: number }): ApplyReport {
  const none = { created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0 };
  return {
    revision,
    ...none,
    held: [],
    errors: [],
    apiCalls,
    drift: [],
    warnings: [],
    changes: [],
    images: [],
    observed: {},
    kinds: {},
    progressing: [],
    waiting,
  };
}
