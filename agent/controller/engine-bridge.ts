import { kindOrder } from '../graph/kind-order.ts';
import { adapters } from '../kinds/index.ts';
import { reconcile, type ApplyReport } from '../act/reconcile.ts';
import type { EngineEvent, EngineEventType } from '../events/events.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { ServiceClient } from '../openstack/service.ts';
import { setCondition } from '../status/conditions.ts';
import type { State } from '../status/state.ts';
import type { ResourceStatus } from '../status/store.ts';
import type { ApplyRevision } from './engine.ts';

/**
 * TEMPORARY: the contract's applyRevision over today's reconcile(), until the
 * house-engine branch provides the real one (then delete this file and pass
 * `applyRevision` in cli/controller.ts). It adds what reconcile() lacks:
 * namespace scoping (Keystone project lists filtered to the namespaces'
 * projects, so prune never reaches another namespace), StateStore load/put,
 * conditions, and typed events (from reconcile's log lines, which is exactly
 * what the real engine stops doing).
 */
export const bridgeApplyRevision: ApplyRevision = async (input, deps, opts) => {
  const namespaces = deps.namespaces;
  const stored = await deps.state.load();
  const state: State = { owner: deps.config.owner, resources: structuredClone(stored.resources), history: [] };
  const before = structuredClone(stored.resources);
  const manifests = namespaces ? input.validated.manifests.filter((m) => namespaces.includes(m.metadata.namespace ?? '')) : input.validated.manifests;
  const lines: string[] = [];
  const startedAt = new Date();
  const report = await reconcile(
    { ...input.validated, manifests },
    {
      cloud: namespaces ? scopedCloud(deps.cloud, namespaces) : deps.cloud,
      adapters,
      kindOrder: kindOrder(deps.registry),
      owner: deps.config.owner,
      projectPrefix: deps.config.projectPrefix,
      domainId: deps.config.domain,
      role: deps.config.role,
      revision: input.revision,
      prune: opts.prune,
      allowMassDelete: opts.allowMassDelete,
      massDeleteThreshold: deps.config.massDeleteThreshold / 100,
      concurrency: deps.config.concurrency,
      readyTimeoutMs: deps.config.readyTimeoutSeconds * 1000,
      transientRetries: 4,
      state,
      log: (line) => lines.push(line),
      signal: deps.signal,
    },
  );
  for (const e of eventsFrom(lines, report, before, input.revision)) deps.events(e);
  const errors = new Map(report.errors.map((e) => [e.address, e]));
  const now = new Date();
  for (const m of manifests) {
    const s: ResourceStatus = { ...state.resources[m.address] };
    const err = errors.get(m.address);
    let conditions = s.conditions ?? [];
    if (err) {
      const terminal = err.code === 'heal.gave-up' || err.code.startsWith('import.');
      conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: terminal ? 'Stalled' : 'ReconcileFailed', message: err.message }, now);
      conditions = setCondition(conditions, { type: 'Stalled', status: terminal ? 'True' : 'False', reason: terminal ? reasonOf(err.code) : 'Retrying', message: terminal ? err.message : 'retried with backoff' }, now);
      conditions = setCondition(conditions, { type: 'Reconciling', status: terminal ? 'False' : 'True', reason: terminal ? 'Stalled' : 'Retrying', message: err.message }, now);
    } else {
      const ready = s.ready !== false;
      conditions = setCondition(conditions, { type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'Reconciled' : 'Progressing', message: ready ? `equal to ${input.revision}` : (s.message ?? 'waiting for OpenStack') }, now);
      conditions = setCondition(conditions, { type: 'Reconciling', status: ready ? 'False' : 'True', reason: ready ? 'Reconciled' : 'Progressing', message: ready ? 'done' : 'waiting for OpenStack' }, now);
      conditions = setCondition(conditions, { type: 'Stalled', status: 'False', reason: 'Reconciled', message: 'nothing blocks this object' }, now);
    }
    await deps.state.putResource(m.address, { ...s, conditions, lastSyncTime: now.toISOString() });
  }
  for (const address of Object.keys(before)) if (!state.resources[address]) await deps.state.putResource(address, undefined);
  await deps.state.finishRun({
    revision: input.revision,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    result: report.errors.length ? 'failed' : report.held.length ? 'held' : 'applied',
    counts: { created: report.created, updated: report.updated, replaced: report.replaced, deleted: report.deleted, healed: report.healed, unchanged: report.unchanged, errors: report.errors.length },
  });
  return report;
};

function reasonOf(code: string): string {
  return code
    .split(/[.-]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

/** Keystone project lists show only the given namespaces' projects: ownedProjects() and hence prune stay inside them. */
function scopedCloud(cloud: OpenStackCloud, namespaces: string[]): OpenStackCloud {
  const tags = new Set(namespaces.map((ns) => `kupenstack-namespace:${ns}`));
  return new Proxy(cloud, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (prop !== 'identity') return value;
      const identity = value as ServiceClient;
      return new Proxy(identity, {
        get(t, p, r) {
          const v: unknown = Reflect.get(t, p, r);
          if (p !== 'list' || typeof v !== 'function') return v;
          return async (path: string, key: string, query?: Record<string, string>) => {
            const items = (await (v as ServiceClient['list']).call(t, path, key, query)) as { tags?: string[] }[];
            return path === '/projects' ? items.filter((p2) => p2.tags?.some((tag) => tags.has(tag))) : items;
          };
        },
      });
    },
  });
}

const verbs: Record<string, { type: EngineEventType; reason: string; severity: 'normal' | 'warning' }> = {
  create: { type: 'created', reason: 'Created', severity: 'normal' },
  update: { type: 'updated', reason: 'Updated', severity: 'normal' },
  replace: { type: 'replaced', reason: 'Replaced', severity: 'normal' },
  delete: { type: 'deleted', reason: 'Deleted', severity: 'normal' },
  heal: { type: 'healed', reason: 'Healed', severity: 'warning' },
  error: { type: 'failed', reason: 'ReconcileFailed', severity: 'warning' },
};

function eventsFrom(lines: string[], report: ApplyReport, before: Record<string, ResourceStatus>, revision: string): EngineEvent[] {
  const at = new Date().toISOString();
  const drifted = new Set(report.drift.map((d) => d.address));
  const out: EngineEvent[] = [];
  for (const line of lines) {
    const match = /^(\w+)\s+(\S+?):?(?:\s(.*))?$/.exec(line);
    if (!match) continue;
    const [, verb, address, rest = ''] = match as unknown as [string, string, string, string | undefined];
    const v = verbs[verb];
    if (!v || !address.includes('/')) continue;
    let { type, reason } = v;
    let message = `${verb} ${rest}`.trim();
    if (verb === 'create' && before[address]?.id) {
      type = 'healed';
      reason = 'Recreated';
      message = `OpenStack object ${before[address].id} was deleted outside KupenStack; created again`;
    } else if (verb === 'create') message = 'created in OpenStack';
    else if (verb === 'update' && drifted.has(address)) {
      type = 'drift-corrected';
      reason = 'DriftCorrected';
      message = `changed outside KupenStack; set back (${rest})`;
    } else if (verb === 'delete') message = `deleted from OpenStack ${rest}`.trim();
    else if (verb === 'error') message = rest;
    out.push({ type, address, kind: address.split('/')[1], reason, message, severity: v.severity, revision, at });
  }
  for (const h of report.held) out.push({ type: 'held', address: h.address, kind: h.address.split('/')[1], reason: 'DeletionHeld', message: h.reason, severity: 'warning', revision, at });
  return out;
}
