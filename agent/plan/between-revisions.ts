import { KupenstackError } from '../errors.ts';
import { declaredId, type AdapterContext, type KindAdapter, type Remote } from '../kinds/kit/adapter.ts';
import type { Manifest } from '../model/manifest.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { decide, notDeclared, planErrorMessage, type Inventory } from './decide.ts';
import { replaceHash } from './diff.ts';
import type { Plan } from './plan.ts';

/**
 * `plan --base`: the declared-state diff between two revisions, with no cloud
 * and no credentials (pull requests from forks). The base revision becomes an
 * offline inventory — every object it declares exists, as declared — and the
 * same planner as against the live cloud decides. Ids are placeholders. What
 * it cannot see: drift, heals, and fields OpenStack would report differently
 * from what the base declared.
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

const ofScope = (m: Manifest, adapters: ReadonlyMap<string, KindAdapter>): boolean => adapters.has(m.kind) && m.metadata.namespace !== undefined;

/** The base revision as if it were the cloud: each managed manifest exists with the fields it declares. */
async function offlineInventory(
  base: ValidatedRevision,
  head: ValidatedRevision,
  adapters: ReadonlyMap<string, KindAdapter>,
  errors: string[],
): Promise<Inventory> {
  const owned = new Map<string, Remote>();
  const detached = new Set<string>();
  for (const m of base.manifests.filter((x) => ofScope(x, adapters) && x.spec.import === undefined)) {
    const adapter = adapters.get(m.kind)!;
    const ref = `${m.kind}/${m.metadata.name}`;
    try {
      const desired = await adapter.desired(
        m,
        offlineContext(m.metadata.namespace!, (kind, name) => declaredId(`${kind}/${name}`)),
      );
      const fields: Record<string, unknown> = Object.fromEntries(Object.keys(adapter.fields).map((k) => [k, notDeclared]));
      Object.assign(fields, desired);
      owned.set(m.address, { id: declaredId(ref), marker: { owner: 'plan', ref, specHash: replaceHash(adapter, desired) }, fields, raw: {} });
      if (m.spec.onDelete === 'detach') detached.add(m.address);
    } catch (err) {
      errors.push(`${m.address} (base): ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const imports = new Map<string, Remote>();
  for (const m of head.manifests.filter((x) => ofScope(x, adapters) && x.spec.import !== undefined))
    imports.set(m.address, { id: declaredId(`${m.kind}/${m.metadata.name}`), fields: {}, raw: {} });
  return {
    owned,
    duplicates: [],
    imports,
    importErrors: new Map(),
    total: owned.size,
    offline: true,
    context: (m, idOf) => (ofScope(m, adapters) ? offlineContext(m.metadata.namespace!, idOf) : undefined),
    resources: {},
    detached: (address) => detached.has(address),
  };
}

export async function planBetweenRevisions(
  base: ValidatedRevision,
  head: ValidatedRevision,
  opts: RevisionPlanOptions,
): Promise<{ plan: Plan; errors: string[] }> {
  const errors: string[] = [];
  const inventory = await offlineInventory(base, head, opts.adapters, errors);
  const decision = await decide(head, inventory, {
    adapters: opts.adapters,
    revision: opts.headLabel,
    against: opts.baseLabel,
    prune: opts.prune,
    allowMassDelete: opts.allowMassDelete,
    massDeleteThreshold: opts.massDeleteThreshold,
  });
  for (const e of decision.errors) errors.push(`${e.address}: ${planErrorMessage(e).message}`);
  return { plan: decision.plan, errors };
}
