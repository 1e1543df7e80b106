import type { AgentConfig } from '../config/config.ts';
import type { Diagnostic } from '../diagnostic.ts';
import { KupenstackError } from '../errors.ts';
import { fanOut, type EventSink } from '../events/events.ts';
import { textLogSink } from '../events/text-log.ts';
import { kindDependencies, kindOrder } from '../graph/kind-order.ts';
import { adapters } from '../kinds/index.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import { decide, planErrorMessage, type Decision } from '../plan/decide.ts';
import { observedHash, StalePlanError, compareObserved, type ObservedState } from '../plan/observed.ts';
import type { Change, Drift, Held, ImageResolution, Plan } from '../plan/plan.ts';
import { jsonPlan } from '../plan/render/json.ts';
import { compareChanges } from '../plan/saved.ts';
import { sharedSchemaRegistry, type SchemaRegistry } from '../schema/registry.ts';
import { describeSecret, type SecretResolver } from '../secrets/resolver.ts';
import { FileCreateJournal, type CreateJournal } from '../status/create-journal.ts';
import { FileStateStore } from '../status/file-store.ts';
import type { ResourceStatus, StateStore } from '../status/store.ts';
import { checkPath } from '../validate/check-path.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import type { Manifest } from '../model/manifest.ts';
import { stableJson } from '../ownership/marker.ts';
import { execute } from './execute.ts';
import { afterLanding } from './landing.ts';
import type { ApplyError, KindCounts, RunCounts } from './run.ts';
import { observe, type Observation } from './observe.ts';

export type { ApplyError, KindCounts };

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
}

export interface EngineOptions {
  prune: boolean;
  allowMassDelete: boolean;
  /** A fast pass over part of a revision (applyChangedPath): not recorded as a run of the revision; the full pass that follows is. */
  partial?: boolean;
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
}

/** Where no secret can be read (a caller that gave no resolver): a manifest that names one fails with the reference, never a value. */
export const noSecrets: SecretResolver = {
  get: (ref) => Promise.reject(new KupenstackError('secret.unavailable', `${describeSecret(ref)} cannot be read here: no secret resolver is configured`)),
};

/** What the live cloud holds for this revision, then the plan: read-only (no project is created either). */
export async function planRevision(input: RevisionInput, deps: EngineDeps, opts: EngineOptions): Promise<PlannedRevision> {
  const before = calls(deps.cloud);
  const { seen, decision } = await observeAndDecide(input, deps, opts, (await deps.state.load()).resources);
  return { ...decision.plan, observed: observedOf(seen), errors: decision.errors.map((e) => applyError(e.address, e.error)), apiCalls: since(deps.cloud, before) };
}

/**
 * Makes OpenStack equal to one revision: observe, decide, execute. With
 * `opts.plan` (a saved plan) the fresh decision must equal it — same observed
 * objects, same changes — or nothing is written (Terraform's "inconsistent
 * final plan"). State goes through `deps.state`, progress through `deps.events`.
 */
export async function applyRevision(input: RevisionInput, deps: EngineDeps, opts: EngineOptions & { plan?: Plan & { observed?: ObservedState } }): Promise<ApplyReport> {
  const started = new Date();
  const before = calls(deps.cloud);
  const stored = await deps.state.load();
  const resources = stored.resources;
  const { seen, decision } = await landed(input, deps, opts, resources);
  const observed = observedOf(seen);
  if (opts.plan) {
    if (opts.plan.revision !== input.revision) throw new StalePlanError([`the manifests are ${input.revision}, the plan was made for ${opts.plan.revision}`]);
    const differences = [...(opts.plan.observed ? compareObserved(opts.plan.observed, observed) : []), ...compareChanges(jsonPlan(opts.plan), jsonPlan(decision.plan))];
    if (differences.length > 0) throw new StalePlanError(differences);
  }
  if (decision.plan.held.length > 0) deps.events({ type: 'held', address: input.revision, reason: 'MassDeleteGuard', message: `${decision.plan.held.length} deletions (mass-delete guard)`, severity: 'warning', revision: input.revision, at: new Date().toISOString() });
  const out = await execute(input.validated, decision, seen, {
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
    transientRetries: 4,
    resources,
    state: deps.state,
    journal: deps.journal,
    events: deps.events,
    signal: deps.signal,
    // Standalone: a namespace that leaves the revision leaves OpenStack. The controller (one namespace at a time) deletes projects with their namespace.
    deleteEmptyProjects: opts.prune && !opts.partial && deps.namespaces === undefined,
    trustKnownProjects: opts.partial === true,
  });
  for (const m of decision.declared) if (!out.kinds[m.kind]) out.kinds[m.kind] = { created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, errors: 0 };
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
  };
  if (!opts.partial) {
    await deps.state.finishRun({
      revision: input.revision,
      startedAt: started.toISOString(),
      durationMs: Date.now() - started.getTime(),
      result: report.errors.length ? 'failed' : report.held.length ? 'held' : 'applied',
      counts: { created: report.created, updated: report.updated, replaced: report.replaced, deleted: report.deleted, healed: report.healed, unchanged: report.unchanged, errors: report.errors.length },
    });
  }
  return report;
}

/** Observe and decide once the creates a dead process sent have landed (act/landing.ts). */
function landed(input: RevisionInput, deps: EngineDeps, opts: EngineOptions, res: Record<string, ResourceStatus>): Promise<{ seen: Observation; decision: Decision }> {
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
  });
}

async function observeAndDecide(input: RevisionInput, deps: EngineDeps, opts: EngineOptions, res: Record<string, ResourceStatus>): Promise<{ seen: Observation; decision: Decision }> {
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
  });
  const decision = await decide(input.validated, seen.inventory, {
    adapters,
    revision: input.revision,
    against: `cloud ${deps.config.cloud}`,
    prune: opts.prune,
    allowMassDelete: opts.allowMassDelete,
    massDeleteThreshold: deps.config.massDeleteThreshold / 100,
  });
  decision.plan.warnings.unshift(...warningsOf(seen));
  return { seen, decision };
}

/** Extra objects carrying one marker: the planner deletes them; the user hears why. */
function warningsOf(seen: Observation): string[] {
  return seen.inventory.duplicates.map((d) => `${d.address}: more than one OpenStack object carries this marker (${d.remote.id} besides ${seen.inventory.owned.get(d.address)?.id ?? '?'}); the extra one is pruned`);
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
const since = (cloud: OpenStackCloud, before: { read: number; write: number }): { read: number; write: number } => ({ read: cloud.counters.read - before.read, write: cloud.counters.write - before.write });

export interface PathOptions {
  path: string;
  cloud: string;
  cloudsFile?: string;
  config: AgentConfig;
  prune: boolean;
  allowMassDelete: boolean;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** Where the OpenStack calls are counted (the agent exports them as metrics). */
  counters?: ApiCounters;
  /** The agent loads the schemas once, not on every run. */
  registry?: SchemaRegistry;
  /** The agent reuses one client per Sync, so its tokens outlive a run. */
  openstack?: OpenStackCloud;
  /** Structured events besides the log lines. */
  events?: EventSink;
  secrets?: SecretResolver;
  /** `apply --plan`: the saved plan this run must equal. */
  plan?: Plan & { observed?: ObservedState };
  /** The source's revision; default: the content hash of the loaded manifests. */
  revision?: string;
}

/** Kept for callers that still pass it. */
export type ApplyPathOptions = PathOptions;

export interface ApplyOutcome {
  /** Set when the revision is invalid: nothing was sent to OpenStack. */
  diagnostics: Diagnostic[];
  report?: ApplyReport;
}

export interface PlanOutcome {
  diagnostics: Diagnostic[];
  report?: PlannedRevision;
}

/** Validate a folder, then make the cloud equal to it (standalone mode; state in config.stateDir). */
export async function applyPath(opts: PathOptions): Promise<ApplyOutcome> {
  const prepared = await prepare(opts);
  if ('diagnostics' in prepared) return { diagnostics: prepared.diagnostics };
  const report = await applyRevision(prepared.input, prepared.deps, { prune: opts.prune, allowMassDelete: opts.allowMassDelete, ...(opts.plan ? { plan: opts.plan } : {}) });
  return { diagnostics: [], report };
}

/** Validate a folder and plan it against the live cloud, changing nothing. */
export async function planPath(opts: PathOptions): Promise<PlanOutcome> {
  const prepared = await prepare(opts);
  if ('diagnostics' in prepared) return { diagnostics: prepared.diagnostics };
  return { diagnostics: [], report: await planRevision(prepared.input, prepared.deps, { prune: opts.prune, allowMassDelete: opts.allowMassDelete }) };
}

/**
 * Sub-second push, the fast pass: only the manifests that differ from the
 * last applied revision (`since`, its folder), plus what they reference, are
 * observed, planned and written — without prune, so nothing is deleted that
 * the full pass would keep. The caller runs the full pass (prune, drift)
 * right after. Nothing is written unless the new revision validates; when
 * `since` no longer validates or nothing differs, the fast pass is skipped.
 */
export async function applyChangedPath(opts: PathOptions & { since: string }): Promise<{ skipped: string } | { report: ApplyReport; changed: number }> {
  const registry = opts.registry ?? sharedSchemaRegistry();
  const [head, base] = await Promise.all([checkPath(opts.path, registry), checkPath(opts.since, registry)]);
  if (head.diagnostics.length > 0) return { skipped: 'the revision does not validate (the full pass reports why)' };
  if (base.diagnostics.length > 0) return { skipped: 'the last applied revision no longer validates' };
  const before = new Map(base.validated.manifests.map((m) => [m.address, declaredForm(m)]));
  const changed = head.validated.manifests.filter((m) => before.get(m.address) !== declaredForm(m));
  if (changed.length === 0) return { skipped: 'no manifest changed' };
  const report = await applySubset(head.validated, head.revision, changed.map((m) => m.address), registry, opts);
  return { report, changed: changed.length };
}

/**
 * A registry notification: only these manifests of a revision (the Images
 * following the tag that moved), plus what they reference, are observed,
 * planned and written, without prune; the rest of the revision waits for
 * the Sync's interval. Skipped when the revision does not validate or holds
 * none of them (the caller then runs the full pass).
 */
export async function applySubsetPath(opts: PathOptions & { addresses: readonly string[] }): Promise<{ skipped: string } | { report: ApplyReport; applied: string[] }> {
  const registry = opts.registry ?? sharedSchemaRegistry();
  const head = await checkPath(opts.path, registry);
  if (head.diagnostics.length > 0) return { skipped: 'the revision does not validate (the full pass reports why)' };
  const wanted = new Set(opts.addresses);
  const applied = head.validated.manifests.filter((m) => wanted.has(m.address)).map((m) => m.address);
  if (applied.length === 0) return { skipped: 'the revision declares none of these manifests any more' };
  return { report: await applySubset(head.validated, head.revision, applied, registry, opts), applied };
}

/**
 * The named manifests of a validated revision and, transitively, what they
 * depend on (its ids fill their references): what a partial pass plans.
 * Addresses the revision does not declare are left out.
 */
export function subsetOf(validatedHead: ValidatedRevision, addresses: readonly string[]): ValidatedRevision {
  const keep = new Set<string>();
  const declared = new Set(validatedHead.manifests.map((m) => m.address));
  const add = (address: string): void => {
    if (keep.has(address) || !declared.has(address)) return;
    keep.add(address);
    for (const d of validatedHead.graph.dependsOn.get(address) ?? []) add(d);
  };
  for (const a of addresses) add(a);
  return { ...validatedHead, manifests: validatedHead.manifests.filter((m) => keep.has(m.address)), order: validatedHead.order.filter((a) => keep.has(a)) };
}

/** The named manifests and what they depend on: a partial run, never a prune. */
async function applySubset(validatedHead: ValidatedRevision, headRevision: string, addresses: readonly string[], registry: SchemaRegistry, opts: PathOptions): Promise<ApplyReport> {
  const validated = subsetOf(validatedHead, addresses);
  const sink = textLogSink(opts.log);
  const cloud = opts.openstack ?? OpenStackCloud.fromCloudsYaml(opts.cloud, opts.cloudsFile, opts.counters);
  const deps: EngineDeps = { cloud, registry, config: { ...opts.config, cloud: opts.cloud }, ...fileStores(opts.config), events: opts.events ? fanOut(sink, opts.events) : sink, secrets: opts.secrets ?? noSecrets, counters: opts.counters, signal: opts.signal };
  return applyRevision({ revision: opts.revision ?? headRevision, validated }, deps, { prune: false, allowMassDelete: false, partial: true });
}

/** A manifest as declared, without where it was read from: equal text in another file is no change. */
function declaredForm(m: Manifest): string {
  return stableJson({ apiVersion: m.apiVersion, kind: m.kind, metadata: m.metadata, spec: m.spec });
}

/** Standalone: the state and the create journal, files in the state folder. */
function fileStores(config: AgentConfig): { state: StateStore; journal: CreateJournal } {
  return { state: new FileStateStore(config.stateDir, config.owner), journal: new FileCreateJournal(config.stateDir, config.owner) };
}

async function prepare(opts: PathOptions): Promise<{ diagnostics: Diagnostic[] } | { input: RevisionInput; deps: EngineDeps }> {
  const registry = opts.registry ?? sharedSchemaRegistry();
  const check = await checkPath(opts.path, registry);
  const sink = textLogSink(opts.log);
  const events: EventSink = opts.events ? fanOut(sink, opts.events) : sink;
  if (check.diagnostics.length > 0) {
    const first = check.diagnostics[0]!;
    events({ type: 'rejected', address: opts.revision ?? check.revision, reason: 'ValidationFailed', message: `${check.diagnostics.length} validation errors, the first at ${first.file}:${first.line}:${first.column}: ${first.message}; nothing was applied`, severity: 'warning', revision: opts.revision ?? check.revision, at: new Date().toISOString() });
    return { diagnostics: check.diagnostics };
  }
  const cloud = opts.openstack ?? OpenStackCloud.fromCloudsYaml(opts.cloud, opts.cloudsFile, opts.counters);
  return {
    input: { revision: opts.revision ?? check.revision, validated: check.validated },
    deps: { cloud, registry, config: { ...opts.config, cloud: opts.cloud }, ...fileStores(opts.config), events, secrets: opts.secrets ?? noSecrets, counters: opts.counters, signal: opts.signal },
  };
}
