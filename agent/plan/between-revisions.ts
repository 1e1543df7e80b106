import { declaredId, knownAfterApply, type AdapterContext, type KindAdapter } from '../kinds/adapter.ts';
import type { Manifest } from '../model/manifest.ts';
import { stableJson } from '../ownership/marker.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { KupenstackError } from '../errors.ts';
import { changeOf } from './change.ts';
import { orderChanges } from './order.ts';
import { summarize, type Change, type FieldDiff, type Held, type ImageResolution, type Plan } from './plan.ts';

/**
 * `plan --base`: the declared-state diff between two revisions, with no cloud
 * and no credentials (pull requests from forks). Each kind's own `desired()`
 * and field table decide update vs replace, exactly as against the live
 * cloud; ids are placeholders. What it cannot see: drift, heals, and fields
 * OpenStack would report differently from what the base declared.
 */

export interface RevisionPlanOptions {
  adapters: ReadonlyMap<string, KindAdapter>;
  /** Manifests removed between the revisions are deleted (the Sync prunes). */
  prune: boolean;
  /** Fraction of the base's objects one revision may delete before it is held. */
  massDeleteThreshold: number;
  allowMassDelete: boolean;
  baseLabel: string;
  headLabel: string;
}

export class OfflineLookupError extends KupenstackError {
  constructor(what: string) {
    super('plan.offline', `${what} needs the cloud, which plan --base does not ask; plan against the cloud with --cloud to see this change`);
  }
}

/** Answers every property with an error: nothing may reach a cloud from an offline plan. */
function noCloud<T extends object>(what: string): T {
  return new Proxy({} as T, {
    get(_target, key) {
      if (key === 'then') return undefined;
      throw new OfflineLookupError(`${what}.${String(key)}`);
    },
  });
}

function offlineContext(namespace: string, idOf: (kind: string, name: string) => string): AdapterContext {
  return {
    cloud: noCloud('cloud'),
    apis: noCloud('apis'),
    namespace,
    projectId: declaredId(`project of ${namespace}`),
    projectName: namespace,
    owner: 'plan',
    offline: true,
    idOf,
    memo: (key) => Promise.reject(new OfflineLookupError(`lookup ${key}`)),
  };
}

/** The manifests the engine would create and update (imports are only observed). */
function managed(rev: ValidatedRevision, adapters: ReadonlyMap<string, KindAdapter>): Map<string, Manifest> {
  const out = new Map<string, Manifest>();
  for (const m of rev.manifests) if (adapters.has(m.kind) && m.metadata.namespace && m.spec.import === undefined) out.set(m.address, m);
  return out;
}

const addressOf = (namespace: string, kind: string, name: string): string => `${namespace}/${kind}/${name}`;

export async function planBetweenRevisions(base: ValidatedRevision, head: ValidatedRevision, opts: RevisionPlanOptions): Promise<{ plan: Plan; errors: string[] }> {
  const errors: string[] = [];
  const warnings: string[] = [];
  const baseSet = managed(base, opts.adapters);
  const headSet = managed(head, opts.adapters);
  const imported = new Set(head.manifests.filter((m) => m.spec.import !== undefined).map((m) => m.address));

  // The base: everything exists, every reference is an existing id.
  const before = new Map<string, Record<string, unknown>>();
  for (const [address, m] of baseSet) {
    const ctx = offlineContext(m.metadata.namespace!, (kind, name) => declaredId(`${kind}/${name}`));
    try {
      before.set(address, await opts.adapters.get(m.kind)!.desired(m, ctx));
    } catch (err) {
      errors.push(`${address} (base): ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  // The head, dependencies first: a reference to an object created or replaced by this change is not known yet.
  const changing = new Set([...headSet.keys()].filter((a) => !baseSet.has(a)));
  const changes: Change[] = [];
  const images: ImageResolution[] = [];
  for (const address of head.order) {
    const m = headSet.get(address);
    if (!m) continue;
    const adapter = opts.adapters.get(m.kind)!;
    const ns = m.metadata.namespace!;
    const ctx = offlineContext(ns, (kind, name) => {
      const target = addressOf(ns, kind, name);
      return changing.has(target) && !imported.has(target) ? knownAfterApply(`${kind}/${name}`) : declaredId(`${kind}/${name}`);
    });
    let after: Record<string, unknown>;
    try {
      after = await adapter.desired(m, ctx);
    } catch (err) {
      errors.push(`${address}: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    const old = before.get(address);
    if (!baseSet.has(address)) {
      changes.push(changeOf(address, adapter, 'create', Object.entries(after).map(([path, value]) => ({ path, before: null, after: value, forcesReplacement: false }))));
      continue;
    }
    if (!old) continue; // The base could not be planned; reported above.
    const fields: FieldDiff[] = [];
    let replace = false;
    for (const [path, value] of Object.entries(after)) {
      const was = path in old ? old[path] : undefined;
      if (stableJson(was) === stableJson(value)) continue;
      const forces = (adapter.fields[path] ?? 'replace') === 'replace';
      replace ||= forces;
      fields.push({ path, before: path in old ? was : '(not declared)', after: value, forcesReplacement: forces });
    }
    if (replace) {
      changing.add(address);
      changes.push(changeOf(address, adapter, 'replace', fields));
    } else if (fields.length > 0) {
      changes.push(changeOf(address, adapter, 'update', fields));
      // An update that makes a new object (an OCI image version): what follows it by id sees a new id.
      for (const f of fields.filter((x) => adapter.impact?.fields?.[x.path]?.newId && x.before !== '(not declared)')) {
        changing.add(address);
        images.push({ address, reference: String(f.after), from: String(f.before), to: String(f.after) });
      }
    }
  }

  // Removed manifests: deleted when the Sync prunes, held when too many go at once.
  const held: Held[] = [];
  const removed = [...baseSet.values()].filter((m) => !headSet.has(m.address) && !imported.has(m.address));
  const detached = removed.filter((m) => m.spec.onDelete === 'detach');
  for (const m of detached) warnings.push(`${m.address}: no longer declared and left in OpenStack (onDelete: detach)`);
  const deletions = removed.filter((m) => m.spec.onDelete !== 'detach');
  if (!opts.prune && deletions.length > 0) {
    warnings.push(`${deletions.length} manifests were removed; their objects are deleted only by a Sync that prunes (plan with --prune to see the deletions)`);
  } else if (deletions.length > 0 && !opts.allowMassDelete && baseSet.size > 0 && deletions.length / baseSet.size > opts.massDeleteThreshold) {
    const reason = `this revision deletes ${deletions.length} of ${baseSet.size} declared objects (more than ${Math.round(opts.massDeleteThreshold * 100)} %); the agent holds it until confirmed`;
    for (const m of deletions) held.push({ address: m.address, action: 'delete', reason });
  } else {
    for (const m of deletions) changes.push(changeOf(m.address, opts.adapters.get(m.kind)!, 'delete', []));
  }

  const ordered = orderChanges(changes);
  const plan: Plan = { revision: opts.headLabel, against: opts.baseLabel, summary: summarize(ordered), changes: ordered, drift: [], held, images, warnings };
  return { plan, errors };
}
