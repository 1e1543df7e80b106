import { join } from 'node:path';
import type { AgentConfig } from '../config/config.ts';
import type { Diagnostic } from '../diagnostic.ts';
import { kindOrder } from '../graph/kind-order.ts';
import { adapters } from '../kinds/index.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import { loadSchemaRegistry, type SchemaRegistry } from '../schema/registry.ts';
import { readState, writeState } from '../status/state.ts';
import { checkPath } from '../validate/check-path.ts';
import type { ObservedState } from './observed.ts';
import { reconcile, type ApplyReport } from './reconcile.ts';

export interface ApplyPathOptions {
  path: string;
  /** The source's revision (`main@sha1:…`): one revision string per run. Default: the content hash of the folder. */
  revision?: string;
  cloud: string;
  cloudsFile?: string;
  config: AgentConfig;
  prune: boolean;
  allowMassDelete: boolean;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** Plan only: compare with the live cloud, change nothing, keep no state. */
  dryRun?: boolean;
  /** Where the OpenStack calls are counted (the agent exports them as metrics). */
  counters?: ApiCounters;
  /** The agent loads the schemas once, not on every run. */
  registry?: SchemaRegistry;
  /** The agent reuses one client per Sync, so its tokens outlive a run. */
  openstack?: OpenStackCloud;
  /** `apply --plan`: stop before the first object write unless OpenStack still looks as it did for the plan. */
  expectObserved?: ObservedState;
}

export interface ApplyOutcome {
  /** Set when the revision is invalid: nothing was sent to OpenStack. */
  diagnostics: Diagnostic[];
  report?: ApplyReport;
}

/** Validate a folder, then make the cloud equal to it (standalone mode; state in config.stateDir). */
export async function applyPath(opts: ApplyPathOptions): Promise<ApplyOutcome> {
  const registry = opts.registry ?? loadSchemaRegistry();
  const check = await checkPath(opts.path, registry);
  if (check.diagnostics.length > 0) return { diagnostics: check.diagnostics };

  const cloud = opts.openstack ?? OpenStackCloud.fromCloudsYaml(opts.cloud, opts.cloudsFile, opts.counters);
  const stateFile = join(opts.config.stateDir, `${opts.config.owner}.json`);
  const state = await readState(stateFile, opts.config.owner);
  const startedAt = new Date();
  const revision = opts.revision ?? check.revision;
  state.lastAttemptedRevision = revision;
  try {
    const report = await reconcile(check.validated, {
      cloud,
      adapters,
      kindOrder: kindOrder(registry),
      owner: opts.config.owner,
      projectPrefix: opts.config.projectPrefix,
      domainId: opts.config.domain,
      role: opts.config.role,
      revision,
      prune: opts.prune,
      allowMassDelete: opts.allowMassDelete,
      massDeleteThreshold: opts.config.massDeleteThreshold / 100,
      concurrency: opts.config.concurrency,
      readyTimeoutMs: opts.config.readyTimeoutSeconds * 1000,
      transientRetries: 4,
      state,
      log: opts.log,
      signal: opts.signal,
      dryRun: opts.dryRun,
      expectObserved: opts.expectObserved,
    });
    if (opts.dryRun) return { diagnostics: [], report };
    if (report.errors.length === 0) state.lastAppliedRevision = revision;
    state.history = [
      ...state.history,
      {
        revision,
        startedAt: startedAt.toISOString(),
        durationMs: Date.now() - startedAt.getTime(),
        result: report.errors.length ? ('failed' as const) : report.held.length ? ('held' as const) : ('applied' as const),
        counts: { created: report.created, updated: report.updated, replaced: report.replaced, deleted: report.deleted, healed: report.healed, unchanged: report.unchanged, errors: report.errors.length },
      },
    ].slice(-10);
    return { diagnostics: [], report };
  } finally {
    if (!opts.dryRun) await writeState(stateFile, state);
  }
}
