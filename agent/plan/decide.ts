import { KupenstackError } from '../errors.ts';
import { knownAfterApply, type AdapterContext, type KindAdapter, type Remote } from '../kinds/kit/adapter.ts';
import type { Manifest } from '../model/manifest.ts';
import type { ResourceState } from '../status/state.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { changeOf } from './change.ts';
import { difference } from './diff.ts';
import { nextHeal } from './heal-policy.ts';
import { orderChanges } from './order.ts';
import { summarize, type Change, type Drift, type Held, type ImageResolution, type Plan } from './plan.ts';

/**
 * What the planner compares a revision with: the objects this owner has, as
 * observed in the live cloud (act/observe.ts) or as an older revision
 * declared them (`plan --base`, plan/between-revisions.ts). The planner never
 * asks a cloud anything itself; adapters may look things up through the
 * contexts the inventory gives (a flavor by name), read-only.
 */
export interface Inventory {
  /** Owned objects by address (`namespace/Kind/name`); one each, the others are in `duplicates`. */
  owned: ReadonlyMap<string, Remote>;
  /** Extra objects carrying an address's marker (a create that was retried blindly long ago). */
  duplicates: readonly { address: string; remote: Remote }[];
  /** Declared imports, resolved to the objects they name; or why not. */
  imports: ReadonlyMap<string, Remote>;
  importErrors: ReadonlyMap<string, unknown>;
  /** What the mass-delete guard counts against: every owned object (live) or every declared one (offline). */
  total: number;
  offline: boolean;
  /**
   * The scope provider: an adapter context for a namespace whose references
   * answer with `idOf`, or undefined when the manifest has no scope the
   * engine handles (cluster-scoped kinds today: they are left out).
   */
  context(m: Manifest, idOf: (kind: string, name: string) => string): AdapterContext | undefined;
  /** Heal attempts of earlier runs. */
  resources: Readonly<Record<string, ResourceState>>;
  /** An undeclared object stays in OpenStack (`onDelete: detach`). */
  detached(address: string): boolean;
  /** Standalone: ids of the objects the Syncs this one depends on applied (a reference may name them). */
  provided?: ReadonlyMap<string, string>;
}

/** What an offline inventory reports for a field the older revision did not declare. */
export const notDeclared = '(not declared)';

export interface DecideOptions {
  adapters: ReadonlyMap<string, KindAdapter>;
  revision: string;
  against: string;
  prune: boolean;
  allowMassDelete: boolean;
  /** Share of `inventory.total` one revision may delete before it is held (0.5 = 50 %). */
  massDeleteThreshold: number;
  now?: number;
}

export interface PlanError {
  address: string;
  error: unknown;
}

export interface Decision {
  plan: Plan;
  /** Manifests that could not be planned (their desired state needs what is not there). */
  errors: PlanError[];
  /** Declared objects with nothing to do. */
  unchanged: number;
  /** Addresses the plan covers, in dependency order (imports included). */
  declared: Manifest[];
}

/**
 * The planner (Terraform's split): a validated revision against an
 * inventory → a Plan, changing nothing. Walks the revision dependencies
 * first, so an object whose reference is created or replaced by this plan
 * sees that id as "known after apply" — which is how a replace cascades:
 * what refers to a replaced object by an immutable field is replaced too,
 * what refers to it by an updatable one is detached first and updated after.
 * Each step of the walk appends to one Draft, and reads what the steps before
 * it decided (`changing`: the ids this plan changes).
 */
export async function decide(rev: ValidatedRevision, inv: Inventory, opts: DecideOptions): Promise<Decision> {
  const now = opts.now ?? Date.now();
  const d: Draft = { changes: [], drift: [], images: [], warnings: [], errors: [], unchanged: 0, changing: new Set(), replaced: new Map() };
  const byAddress = new Map(rev.manifests.map((m) => [m.address, m]));
  const declared: Manifest[] = [];
  for (const address of rev.order) {
    const m = byAddress.get(address);
    const adapter = m && opts.adapters.get(m.kind);
    if (!m || !adapter) continue;
    const ctx = inv.context(m, idOf(m, inv, d.changing));
    if (!ctx) continue;
    declared.push(m);
    if (m.spec.import !== undefined && importSettled(m, adapter, ctx, inv, d)) continue;
    await planManaged(m, adapter, ctx, inv, d, now);
  }
  cascade(d.replaced, d.changes, inv);
  const held = prune(declared, inv, opts, d);
  const ordered = orderChanges(d.changes);
  const { drift, images, warnings, errors, unchanged } = d;
  return {
    plan: { revision: opts.revision, against: opts.against, summary: summarize(ordered), changes: ordered, drift, held, images, warnings },
    errors,
    unchanged,
    declared,
  };
}

/** The plan as the walk builds it: each step appends, in revision order. */
interface Draft {
  changes: Change[];
  drift: Drift[];
  images: ImageResolution[];
  warnings: string[];
  errors: PlanError[];
  /** Declared objects with nothing to do. */
  unchanged: number;
  /** Addresses whose id this plan changes (created, replaced, moved to a new object). */
  changing: Set<string>;
  replaced: Map<string, Change>;
}

/** How a manifest's references resolve: an id this plan changes is known only after apply. */
function idOf(m: Manifest, inv: Inventory, changing: ReadonlySet<string>): (kind: string, name: string) => string {
  const ns = m.metadata.namespace ?? '';
  return (kind, name) => {
    const target = `${ns}/${kind}/${name}`;
    if (changing.has(target)) return knownAfterApply(`${kind}/${name}`);
    return (inv.imports.get(target) ?? inv.owned.get(target))?.id ?? inv.provided?.get(target) ?? knownAfterApply(`${kind}/${name}`);
  };
}

/**
 * A declared import: true when that is all there is to plan for it (observe-only,
 * or an adoption to write or refuse); false when it is planned like any owned
 * object (adopted already, or its lookup failed and the error is recorded).
 */
function importSettled(m: Manifest, adapter: KindAdapter, ctx: AdapterContext, inv: Inventory, d: Draft): boolean {
  const address = m.address;
  const err = inv.importErrors.get(address);
  if (err !== undefined) {
    d.errors.push({ address, error: err });
    return false;
  }
  if (!adopts(m)) {
    if (m.spec.managementPolicy !== 'unmanaged')
      d.warnings.push(`${address}: import is observe-only; KupenStack never changes or deletes an object it did not create`);
    return true;
  }
  const found = inv.imports.get(address)!;
  // Not ours yet: the only write is the marker. Once it is, the manifest is planned like any owned object.
  if (inv.owned.get(address)?.id === found.id) return false;
  const unsupported = 'cannot be adopted yet (KupenStack has no way to mark it as its own); remove import.adopt to import it observe-only';
  if (!adapter.remark) d.errors.push({ address, error: new KupenstackError('adopt.unsupported', `${m.kind} ${unsupported}`) });
  else if (found.marker && found.marker.owner !== ctx.owner) {
    const owner = `${found.marker.owner} (${found.marker.ref})`;
    const message = `${m.kind} ${found.id} already carries the marker of owner ${owner}; adopt it with that owner, or remove import.adopt`;
    d.errors.push({ address, error: new KupenstackError('adopt.owned-elsewhere', message) });
  } else d.changes.push(changeOf(address, adapter, 'adopt', [], found.id));
  return true;
}

/** A managed object: its desired state, created when missing, else compared with what is there. */
async function planManaged(m: Manifest, adapter: KindAdapter, ctx: AdapterContext, inv: Inventory, d: Draft, now: number): Promise<void> {
  const address = m.address;
  let desired: Record<string, unknown>;
  try {
    desired = await adapter.desired(m, ctx);
  } catch (err) {
    d.errors.push({ address, error: err });
    return;
  }
  const remote = inv.owned.get(address);
  const follows = inv.offline ? undefined : adapter.follows?.(m, desired, remote);
  if (follows && follows.from !== follows.to) d.images.push({ address, ...follows });
  if (remote) return compare(m, adapter, desired, remote, inv, d, now);
  const created = changeOf(
    address,
    adapter,
    'create',
    Object.entries(desired).map(([path, after]) => ({ path, before: null, after, forcesReplacement: false })),
  );
  const sharing = adapter.sharedAction?.('create', desired);
  if (sharing) created.sharing = sharing;
  d.changes.push(created);
  d.changing.add(address);
}

/** An object that exists, against its desired state: replaced, healed, updated, or left alone (drift warned). */
function compare(m: Manifest, adapter: KindAdapter, desired: Record<string, unknown>, remote: Remote, inv: Inventory, d: Draft, now: number): void {
  const address = m.address;
  const diff = difference(adapter, desired, remote);
  if (diff.replace) {
    const change = changeOf(address, adapter, 'replace', diff.fields, remote.id);
    d.changes.push(change);
    d.replaced.set(address, change);
    d.changing.add(address);
    return;
  }
  if (heal(m, adapter, remote, inv, d, now)) return;
  for (const x of diff.drift.filter((y) => y.immutable)) {
    d.drift.push({ address, ...x });
    const values = `${JSON.stringify(x.actual)} in OpenStack but ${JSON.stringify(x.expected)} in Git`;
    d.warnings.push(`${address}: ${x.path} is ${values}, and cannot change in place; left alone (change the manifest to replace it)`);
  }
  if (Object.keys(diff.updates).length === 0) {
    d.unchanged++;
    return;
  }
  for (const x of diff.drift.filter((y) => !y.immutable)) d.drift.push({ address, ...x });
  d.changes.push(changeOf(address, adapter, 'update', diff.fields, remote.id));
  // The update makes a new object (an OCI tag move): what references it sees a new id.
  for (const f of diff.fields.filter(
    (x) => adapter.impact?.fields?.[x.path]?.newId && x.before !== null && x.before !== undefined && x.before !== notDeclared,
  )) {
    d.changing.add(address);
    // Offline there is no registry to follow: the declared versions are the image line.
    if (inv.offline) d.images.push({ address, reference: String(f.after), from: String(f.before), to: String(f.after) });
  }
}

/** A failed object gets its policy's next heal step, or a warning why not; true when it was failed (nothing else to plan). */
function heal(m: Manifest, adapter: KindAdapter, remote: Remote, inv: Inventory, d: Draft, now: number): boolean {
  // An older revision has no health: only the live cloud heals.
  const health = inv.offline ? undefined : adapter.health?.(remote);
  if (health?.state !== 'failed' || !adapter.heal) return false;
  const address = m.address;
  const decision = nextHeal(m, inv.resources[address]?.heal ?? [], now);
  if (decision.step) {
    const change = changeOf(address, adapter, 'heal', [], remote.id);
    change.heal = { step: decision.step, attempt: decision.attempt, reason: health.reason };
    if (decision.step !== 'reboot')
      change.reasons.push(adapter.impact?.onDelete ?? { code: 'object-deleted', message: `${decision.step} starts the object again` });
    change.destructive = decision.step !== 'reboot';
    d.changes.push(change);
  } else d.warnings.push(`${address}: failed (${health.reason}); ${decision.giveUp ?? decision.wait ?? ''}`);
  return true;
}

/** Prune: ours, no longer declared (and duplicates), as delete changes; all held when it is too much at once. */
function prune(declared: readonly Manifest[], inv: Inventory, opts: DecideOptions, d: Draft): Held[] {
  const declaredSet = new Set(declared.map((m) => m.address));
  const undeclared = [...inv.owned.entries()].filter(([address]) => !declaredSet.has(address));
  for (const [address] of undeclared.filter(([a]) => inv.detached(a)))
    d.warnings.push(`${address}: no longer declared and left in OpenStack (onDelete: detach)`);
  const prunable = undeclared.filter(([a]) => !inv.detached(a));
  const held: Held[] = [];
  const deletions: [string, Remote][] = [];
  if (!opts.prune) {
    if (inv.offline && prunable.length > 0)
      d.warnings.push(
        `${prunable.length} manifests were removed; their objects are deleted only by a Sync that prunes (plan with --prune to see the deletions)`,
      );
  } else if (prunable.length > 0 && !opts.allowMassDelete && inv.total > 0 && prunable.length / inv.total > opts.massDeleteThreshold) {
    const pct = Math.round(opts.massDeleteThreshold * 100);
    const reason = inv.offline
      ? `this revision deletes ${prunable.length} of ${inv.total} declared objects (more than ${pct} %); the agent holds it until confirmed`
      : `this revision deletes ${prunable.length} of ${inv.total} owned objects (more than ${pct} %); confirm with --allow-mass-delete`;
    for (const [address] of prunable) held.push({ address, action: 'delete', reason });
  } else deletions.push(...prunable);
  for (const x of inv.duplicates) if (opts.prune || declaredSet.has(x.address)) deletions.push([x.address, x.remote]);
  for (const [address, remote] of deletions) {
    const adapter = opts.adapters.get(address.split('/')[1] ?? '');
    if (!adapter) continue;
    const deleted = changeOf(address, adapter, 'delete', [], remote.id);
    const sharing = adapter.sharedAction?.('delete', remote.fields);
    if (sharing) deleted.sharing = sharing;
    d.changes.push(deleted);
  }
  return held;
}

/**
 * A replaced object is deleted before its successor exists. Whatever still
 * uses it by an updatable field (a router interface, a port's fixed IP on a
 * replaced subnet) is detached first, or the service refuses the delete as
 * "in use"; both sides are destructive (addresses change, traffic stops).
 */
function cascade(replaced: ReadonlyMap<string, Change>, changes: Change[], inv: Inventory): void {
  for (const [address, change] of replaced) {
    const oldId = inv.owned.get(address)?.id;
    if (!oldId) continue;
    const [, kind = '', name = ''] = address.split('/');
    const placeholder = JSON.stringify(knownAfterApply(`${kind}/${name}`)).slice(1, -1);
    const detached: string[] = [];
    const followers: string[] = [];
    for (const other of changes) {
      if (other.address === address || other.namespace !== change.namespace) continue;
      const uses = other.fields.some((f) => JSON.stringify(f.before ?? null).includes(oldId) && JSON.stringify(f.after ?? null).includes(placeholder));
      if (!uses) continue;
      if (other.action === 'update') {
        other.detachFrom = [...(other.detachFrom ?? []), address];
        other.reasons.push({
          code: 'fixed-ip-changes',
          message: `detached from ${kind}/${name} while it is replaced, then attached to the new one: its addresses there change`,
        });
        other.destructive = true;
        detached.push(`${other.kind}/${other.name}`);
      } else if (other.action === 'replace') followers.push(`${other.kind}/${other.name}`);
    }
    if (detached.length + followers.length === 0) continue;
    const parts = [
      detached.length ? `detaches ${detached.sort().join(', ')} first` : '',
      followers.length ? `replaces ${followers.sort().join(', ')} with it` : '',
    ].filter(Boolean);
    change.reasons.push({ code: 'dependents-deleted', message: `replacing it ${parts.join(' and ')}` });
    change.destructive = true;
  }
}

/** A message for a planning error, as the engine reports it. */
export function planErrorMessage(e: PlanError): { code: string; message: string } {
  const err = e.error instanceof KupenstackError ? e.error : undefined;
  return { code: err?.code ?? 'internal', message: e.error instanceof Error ? e.error.message : String(e.error) };
}

/** A managed import with `adopt: true`: the object is taken over (marker written) and managed from then on. */
export function adopts(m: Manifest): boolean {
  const spec = m.spec.import as { adopt?: unknown } | undefined;
  return spec?.adopt === true && m.spec.managementPolicy !== 'unmanaged';
}
