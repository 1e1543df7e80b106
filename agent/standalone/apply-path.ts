import { applyRevision, noSecrets, planRevision, type ApplyReport, type EngineDeps, type PlannedRevision, type RevisionInput } from '../act/apply.ts';
import type { AgentConfig } from '../config/config.ts';
import type { Diagnostic } from '../diagnostic.ts';
import { fanOut, type EventSink } from '../events/events.ts';
import { textLogSink } from '../events/text-log.ts';
import type { Manifest } from '../model/manifest.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import { stableJson } from '../ownership/marker.ts';
import type { ObservedState } from '../plan/observed.ts';
import type { Plan } from '../plan/plan.ts';
import { sharedSchemaRegistry, type SchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import { FileCreateJournal, type CreateJournal } from '../status/create-journal.ts';
import { FileStateStore } from '../status/file-store.ts';
import type { StateStore } from '../status/store.ts';
import { checkPath } from '../validate/check-path.ts';
import { subsetOf } from '../validate/subset.ts';
import type { ValidatedRevision } from '../validate/validate.ts';

/*
 * The standalone folder front end of the engine (`apply`, `plan`, the
 * standalone agent): a folder on disk is loaded and validated here, then
 * handed to the engine door (act/apply.ts) as data, with file stores.
 */

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
