import { applyRevision, noSecrets, planRevision, type ApplyReport, type EngineDeps, type PlannedRevision, type RevisionInput } from '../act/apply.ts';
import type { DependencyObjects } from '../act/dependencies.ts';
import type { AgentConfig } from '../config/config.ts';
import type { Diagnostic } from '../diagnostic.ts';
import { fanOut, type EventSink } from '../events/events.ts';
import { textLogSink } from '../events/text-log.ts';
import { refuseRolloutsStandalone } from '../kinds/imagerollout/index.ts';
import { ImageMemory } from '../kinds/kit/image-memory.ts';
import type { Manifest } from '../model/manifest.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import { applyOnly } from '../act/partial.ts';
import { stableJson } from '../ownership/marker.ts';
import type { ObservedState } from '../plan/observed.ts';
import type { Plan } from '../plan/plan.ts';
import { sharedSchemaRegistry, type SchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import { FileCreateJournal, type CreateJournal } from '../status/create-journal.ts';
import { FileStateStore } from '../status/file-store.ts';
import type { StateStore } from '../status/store.ts';
import { checkPath } from '../validate/check-path.ts';
import type { ValidatedRevision } from '../validate/validate.ts';

/*
 * The standalone folder front end of the engine (`apply`, `plan`, the
 * standalone agent): a folder on disk is loaded and validated here, then
 * handed to the engine door (act/apply.ts) as data, with file stores.
 */

/** How the standalone front end applies: everything but what to apply. */
export interface StandaloneOptions {
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
  /** What the Image kind remembers between runs (the agent's, for its life); default: this run's own. */
  images?: ImageMemory;
  /** Images a registry notification moved: resolved again whatever their interval (EngineDeps.refresh). */
  refresh?: ReadonlySet<string>;
  /** The agent's Syncs: what the Syncs this one depends on made (references across Syncs). */
  dependencies?: DependencyObjects;
}

export interface PathOptions extends StandaloneOptions {
  path: string;
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
  const input = await loadPath(opts);
  if ('diagnostics' in input) return input;
  return { diagnostics: [], report: await applyValidated(input, opts) };
}

/** Validate a folder and plan it against the live cloud, changing nothing. */
export async function planPath(opts: PathOptions): Promise<PlanOutcome> {
  const input = await loadPath(opts);
  if ('diagnostics' in input) return input;
  return { diagnostics: [], report: await planRevision(input, engineDeps(opts), { prune: opts.prune, allowMassDelete: opts.allowMassDelete }) };
}

/** A revision already loaded and validated (the agent's Sync run, `apply` after its cloud step): no folder is read again. */
export async function applyValidated(input: RevisionInput, opts: StandaloneOptions): Promise<ApplyReport> {
  refuseRolloutsStandalone(input.validated.manifests);
  return applyRevision(input, engineDeps(opts), { prune: opts.prune, allowMassDelete: opts.allowMassDelete, ...(opts.plan ? { plan: opts.plan } : {}) });
}

/** The fast pass over two folders (tests and benchmarks; the agent hands in revisions it validated already). */
export async function applyChangedPath(opts: PathOptions & { since: string }): Promise<{ skipped: string } | { report: ApplyReport; changed: number }> {
  const registry = opts.registry ?? sharedSchemaRegistry();
  const [head, base] = await Promise.all([checkPath(opts.path, registry), checkPath(opts.since, registry)]);
  if (head.diagnostics.length > 0) return { skipped: 'the revision does not validate (the full pass reports why)' };
  if (base.diagnostics.length > 0) return { skipped: 'the last applied revision no longer validates' };
  return applyChanged({ revision: opts.revision ?? head.revision, validated: head.validated }, base.validated, { ...opts, registry });
}

/**
 * Sub-second push, the fast pass: only the manifests that differ from the
 * last applied revision (`base`), plus what they reference, are observed,
 * planned and written — without prune, so nothing is deleted that the full
 * pass would keep. The caller runs the full pass (prune, drift) right after.
 * Skipped when nothing differs.
 */
export async function applyChanged(
  head: RevisionInput,
  base: ValidatedRevision,
  opts: StandaloneOptions,
): Promise<{ skipped: string } | { report: ApplyReport; changed: number }> {
  const before = new Map(base.manifests.map((m) => [m.address, declaredForm(m)]));
  refuseRolloutsStandalone(head.validated.manifests);
  const changed = head.validated.manifests.filter((m) => before.get(m.address) !== declaredForm(m));
  if (changed.length === 0) return { skipped: 'no manifest changed' };
  const pass = await applyOnly(
    applyRevision,
    head,
    changed.map((m) => m.address),
    engineDeps(opts),
  );
  return 'skipped' in pass ? pass : { report: pass.report, changed: changed.length };
}

/** A registry notification: only the Images it named (and what they need) from the last good revision; the rest waits for the interval. */
export async function applySubset(
  head: RevisionInput,
  addresses: readonly string[],
  opts: StandaloneOptions,
): Promise<{ skipped: string } | { report: ApplyReport; applied: string[] }> {
  refuseRolloutsStandalone(head.validated.manifests);
  return applyOnly(applyRevision, head, addresses, engineDeps(opts));
}

/** A manifest as declared, without where it was read from: equal text in another file is no change. */
function declaredForm(m: Manifest): string {
  return stableJson({ apiVersion: m.apiVersion, kind: m.kind, metadata: m.metadata, spec: m.spec });
}

/** Standalone: the state and the create journal, files in the state folder. */
function fileStores(config: AgentConfig): { state: StateStore; journal: CreateJournal } {
  return { state: new FileStateStore(config.stateDir, config.owner), journal: new FileCreateJournal(config.stateDir, config.owner) };
}

function eventsOf(opts: StandaloneOptions): EventSink {
  const sink = textLogSink(opts.log);
  return opts.events ? fanOut(sink, opts.events) : sink;
}

function engineDeps(opts: StandaloneOptions): EngineDeps {
  const cloud = opts.openstack ?? OpenStackCloud.fromCloudsYaml(opts.cloud, opts.cloudsFile, opts.counters);
  return {
    cloud,
    registry: opts.registry ?? sharedSchemaRegistry(),
    config: { ...opts.config, cloud: opts.cloud },
    ...fileStores(opts.config),
    events: eventsOf(opts),
    secrets: opts.secrets ?? noSecrets,
    counters: opts.counters,
    signal: opts.signal,
    images: opts.images ?? new ImageMemory(),
    ...(opts.refresh ? { refresh: opts.refresh } : {}),
    ...(opts.dependencies ? { dependencies: opts.dependencies } : {}),
    annotatedProjects: true,
  };
}

/** Loads and validates a folder once; an invalid one is said on the events (nothing is applied). */
export async function loadPath(opts: PathOptions): Promise<{ diagnostics: Diagnostic[] } | RevisionInput> {
  const check = await checkPath(opts.path, opts.registry ?? sharedSchemaRegistry());
  const revision = opts.revision ?? check.revision;
  if (check.diagnostics.length > 0) {
    const first = check.diagnostics[0]!;
    eventsOf(opts)({
      type: 'rejected',
      address: revision,
      reason: 'ValidationFailed',
      message: `${check.diagnostics.length} validation errors, the first at ${first.file}:${first.line}:${first.column}: ${first.message}; nothing was applied`,
      severity: 'warning',
      revision,
      at: new Date().toISOString(),
    });
    return { diagnostics: check.diagnostics };
  }
  return { revision, validated: check.validated };
}
