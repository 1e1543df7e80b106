import type { ImageVerify } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import type { OpenStackCloud, ProjectApis } from '../../openstack/cloud.ts';
import type { OpenStackError } from '../../openstack/errors.ts';
import type { Marker } from '../../ownership/marker.ts';
import type { DestructiveReason } from '../../model/impact.ts';
import type { SecretResolver } from '../../secrets/resolver.ts';
import type { ImageMemory } from './image-memory.ts';
import type { Progress } from '../../../lib/progress.ts';

/**
 * What one kind knows about OpenStack, and nothing else: API paths, the field
 * mapping, which fields change in place and which force a replacement, and
 * what "healthy" means. The engine holds everything generic (ordering,
 * adoption, retries, prune, status) and never asks which kind it is handling.
 *
 * Progress by requeue (`ctx.requeue`, the controller): a method that would
 * wait for OpenStack (a resize, an extend, a pending load balancer, another
 * worker's upload) looks once and returns `Waiting` instead (kinds/look-again.ts);
 * the engine records the object as progressing and a later run goes on from
 * what OpenStack shows then. Update, delete and remark may; create never waits.
 */
export interface KindAdapter {
  readonly kind: string;

  /**
   * The OpenStack service that does this kind's work. The engine gives each
   * service its own `concurrency` slots, so a queue of Nova work (flavors,
   * key pairs) never holds back Neutron's and the reverse. Absent = a lane
   * of the kind's own (a kind spread over several services).
   */
  readonly service?: 'network' | 'compute' | 'image' | 'volume';

  /**
   * Every field `desired()` may return, and how a change to it is applied:
   * `update` in place, or `replace` (delete and create again). The engine
   * hashes the `replace` fields into the marker, so a changed manifest is told
   * apart from drift made outside Git (which is reported, not acted on).
   */
  readonly fields: Readonly<Record<string, FieldChange>>;

  /**
   * What makes an object of this kind the namespace's project's own (Ownership below; the kit's entries in kinds/kit/ownership.ts): an import
   * must be its own or usable by it, an adoption its own. Every kind states it, whether or not it imports.
   */
  readonly ownership: Ownership;

  /**
   * Every object of this kind in the project that carries `ctx.owner`'s
   * marker, in ONE list call (plus pagination): never one GET per object.
   * Objects without our marker are never returned.
   */
  observe(ctx: AdapterContext): Promise<Remote[]>;

  /**
   * The same for many projects at once: ONE paginated list cloud-wide with
   * the agent's admin scope (Neutron without a project filter, Nova and
   * Cinder `all_tenants`, Glance's admin list), so the calls do not grow with
   * the number of projects. Pages are read one at a time and only marked
   * objects of `ctx.projects` are kept. Keyed by project id. Absent = the
   * engine observes this kind per project.
   */
  observeCloud?(ctx: CloudContext): Promise<Map<string, Remote[]>>;

  /**
   * A targeted run's observe (issue 33): the marked objects of `ctx.owner` that
   * these manifests may own, found by their OpenStack name now, or by the id a
   * run recorded for them (an object renamed since), in a filtered list instead
   * of the project's whole collection. MUST return every marked object a create
   * of these manifests under their current names made; one made under an older
   * name is found by the full pass, which the engine always ran in this process
   * before it asks this (a targeted run trusts what that pass saw). Absent =
   * `observe`.
   */
  observeSome?(ctx: AdapterContext, wanted: ObserveWanted): Promise<Remote[]>;

  /**
   * The manifest as field values in the same shape `observe` reports them,
   * references already turned into OpenStack ids with `ctx.idOf`. Only fields
   * the manifest declares: what it leaves out is left as OpenStack has it.
   */
  desired(m: Manifest, ctx: AdapterContext): Record<string, unknown> | Promise<Record<string, unknown>>;

  /**
   * Creates the object WITH the marker in the create call itself, and MUST
   * NOT perform any action that can fail after the create: whatever is left
   * (tags, attachments, waiting) is an update on the next step. A retried
   * create after a crash must find the marked object through `observe`.
   */
  create(ctx: AdapterContext, m: Manifest, desired: Record<string, unknown>, marker: Marker): Promise<Remote>;

  /**
   * A refusal of a create that our own earlier create of the same object can
   * cause (a Subnet's CIDR overlapping itself, made by a killed run whose
   * create landed after this run observed): the engine looks the marker up
   * and adopts before reporting the error.
   */
  refusedByTwin?(err: OpenStackError): boolean;

  /**
   * Neutron's bulk create: the engine sends the bodies of several creates of
   * this kind in one project as ONE POST of a list (`{networks: [...]}`),
   * each body carrying its marker, so a lost answer is adopted through
   * `observe` like a single create. `body` + `remote` together are `create`.
   */
  readonly bulkCreate?: {
    /** The URL path (`security-groups`). */
    collection: string;
    /** The list's JSON key when it differs from the path (`security_groups`). */
    key?: string;
    body(ctx: AdapterContext, m: Manifest, desired: Record<string, unknown>, marker: Marker): Record<string, unknown> | Promise<Record<string, unknown>>;
    remote(raw: Record<string, unknown>, desired: Record<string, unknown>, marker: Marker): Remote;
    /**
     * Bulks go with the agent's admin scope and the project in each body (OpenTofu's way: Neutron then
     * skips a full network load per subnet and port). Admin scope also skips Neutron's checks that the
     * project may make the object, so the kind says, from what the engine knows, which scope this create
     * needs: `admin` when it is a request the project could make itself (its own network and groups, no
     * admin-only field); `project` when Neutron must judge it with the project's token (it is sent
     * alone). It throws a typed error (file:line, fix) for a create the project is known not to be
     * allowed (a subnet or port on another project's network that is not shared with it).
     */
    scope(ctx: AdapterContext, m: Manifest, desired: Record<string, unknown>): BulkScope | Promise<BulkScope>;
  };

  /**
   * Applies changed `update` fields (only those are passed). Returns the
   * object that now stands for the manifest when the update moved it to
   * another id (an OCI tag move makes a new Glance image and keeps the old
   * one); references to the manifest follow it.
   */
  update(ctx: AdapterContext, remote: Remote, changes: Record<string, unknown>, m: Manifest): Promise<void | Remote | Waiting>;

  /**
   * A moving reference the object follows (an OCI tag) and the version it
   * points to now, for the plan's image lines. `from` is the version the
   * object holds. Pure: computed from what desired() and observe() gave.
   */
  /**
   * A create or delete that is a share or unshare of an object other
   * projects use too (a shared image): the plan names it so. `fields` are
   * the desired fields of a create, the observed ones of a delete.
   */
  sharedAction?(action: 'create' | 'delete', fields: Record<string, unknown>): 'share' | 'unshare' | undefined;
  follows?(m: Manifest, desired: Record<string, unknown>, remote: Remote | undefined): { reference: string; from?: string; to: string } | undefined;

  /** Deletes; "already gone" is success. */
  delete(ctx: AdapterContext, remote: Remote): Promise<void | Waiting>;

  /** One object by id (import by id, polling after create). Undefined when it does not exist. */
  get?(ctx: AdapterContext, id: string): Promise<Remote | undefined>;

  /** Pre-existing objects matching an import filter (any owner). */
  find?(ctx: AdapterContext, filter: ImportFilter): Promise<Remote[]>;

  /**
   * The object whose sharing makes another project's object of this kind usable (a subnet: its
   * network, which Neutron shares with the subnets on it). An import of another project's object is
   * refused unless it, or this, is shared.
   */
  sharedThrough?(raw: unknown): { kind: string; id: string } | undefined;

  /** Ready, still converging (poll again), or failed (for VMs: heal). Absent = ready once it exists. */
  health?(remote: Remote): Health;

  /** Read by the planner to flag destructive changes honestly. */
  readonly impact?: Impact;

  /**
   * Repairs a failed object in place (VMs: `reboot`, then `rebuild`); the
   * engine decides the step from the manifest's heal policy and the attempts
   * so far, and does `recreate` itself (delete + create).
   */
  heal?(ctx: AdapterContext, remote: Remote, step: 'reboot' | 'rebuild', m: Manifest): Promise<void>;

  /**
   * What an operator looks for in the resource's status (a VM's power state
   * and addresses, a floating IP's address), named as the kind's schema names
   * its `status` fields. Pure: read from what `observe`/`get` returned.
   */
  report?(remote: Remote): Record<string, unknown>;

  /**
   * Replace cascade: stops using these OpenStack objects (a subnet about to be
   * deleted and created again), so their deletion is not refused as "in use".
   * The update that follows their re-creation attaches the new ones. Only
   * touches what refers to `ids`; absent = the kind holds no such use.
   */
  release?(ctx: AdapterContext, remote: Remote, ids: readonly string[]): Promise<void>;

  /**
   * Rewrites the marker (same owner and ref, a new spec hash) without
   * touching anything else: the manifest dropped a `replace` field, and the
   * stale hash would make later drift look like a manifest change. Also
   * adoption's only write (`import.adopt`): the marker on an object made
   * without KupenStack, with what the kind records beside it from the
   * manifest `m` (a VM's image manifest name).
   */
  remark?(ctx: AdapterContext, remote: Remote, marker: Marker, m: Manifest): Promise<void | Waiting>;
}

export type FieldChange = 'update' | 'replace';

/** What a method returns in requeue mode instead of waiting for OpenStack (lib/progress.ts's Looked). */
export type Waiting = { waiting: Progress };

/** The progress a method returned instead of its result, or undefined for a result. */
export function waitingOf(value: void | Remote | Waiting): Progress | undefined {
  return value && 'waiting' in value ? value.waiting : undefined;
}

/** Which token a create needs (KindAdapter.bulkCreate.scope). */
export type BulkScope = 'admin' | 'project';

/** What a plan must say about changing this kind, beyond the field values. */
export interface Impact {
  /** Deleting (or replacing) an object of this kind loses this. */
  onDelete?: { code: DestructiveReason; message: string };
  /**
   * Updates of these fields are more than a write: a rebuild, a resize.
   * `newId`: the update gives the manifest a new object (the old one is
   * kept), so a plan shows references to it as known after apply.
   * `heal`: correcting this field repairs the object (a VM powered off
   * outside Git): the engine counts and records it as that heal step.
   */
  fields?: Record<string, { code?: DestructiveReason; note: string; newId?: boolean; heal?: 'reboot' }>;
}

/** An OpenStack object as observed. */
export interface Remote {
  id: string;
  name?: string;
  marker?: Marker;
  /** Observed values of the adapter's fields, normalised to the shape `desired` uses. */
  fields: Record<string, unknown>;
  /** The service's own status word (ACTIVE, ERROR, active, available, …), when it has one. */
  status?: string;
  raw: Record<string, unknown>;
}

/**
 * `progressing` objects are left alone until they settle (a server in BUILD
 * takes no power action), unless `waitsForUpdate`: then the update is what
 * moves them on (an image queued until its data is uploaded).
 */
export type Health =
  | { state: 'ready' }
  /** `afterMs`: when to look again (ORC's "poll again later"); absent = the engine's default. */
  | { state: 'progressing'; reason: string; waitsForUpdate?: boolean; afterMs?: number }
  | { state: 'failed'; reason: string };

/** The agent's admin view of the cloud, for observing every project in one list (KindAdapter.observeCloud). */
export interface CloudContext {
  cloud: OpenStackCloud;
  /** Clients with the agent's own (admin) scope. */
  apis: Omit<ProjectApis, 'projectId'>;
  owner: string;
  /** Project id → the namespace and Keystone name of each project observed. */
  projects: ReadonlyMap<string, { namespace: string; name: string }>;
  signal?: AbortSignal;
  /** What the run reads and writes Secrets with (an ApplicationCredential's Secret says which credential is delivered). */
  secrets?: SecretResolver;
}

/** Keeps `remote` under its project when that project is one being observed. */
export function bucket(out: Map<string, Remote[]>, projectId: unknown, remote: Remote): void {
  if (typeof projectId !== 'string') return;
  const list = out.get(projectId);
  if (list) list.push(remote);
  else out.set(projectId, [remote]);
}

/** What a targeted run observes of one kind in one project (KindAdapter.observeSome). */
export interface ObserveWanted {
  manifests: readonly Manifest[];
  /** The ids runs recorded for them (their status). */
  ids: readonly string[];
}

export interface ImportFilter {
  name?: string;
  description?: string;
  tags?: string[];
}

export interface AdapterContext {
  cloud: OpenStackCloud;
  /** Clients scoped to the namespace's project. */
  apis: ProjectApis;
  namespace: string;
  projectId: string;
  /** Keystone name of the project: prefixes names that are unique cloud- or user-wide (flavors, key pairs). */
  projectName: string;
  owner: string;
  /** The OpenStack id of another manifest's object in this namespace; throws when it does not exist yet. */
  idOf(kind: string, name: string): string;
  /**
   * That object as this run observed or made it (what idOf answers the id of), so a kind reads what
   * another kind already listed instead of asking again. Absent where the engine does not know.
   */
  remoteOf?(kind: string, name: string): Remote | undefined;
  /**
   * The object a reference names when its manifest imports it (`spec.import`), as observe read it: it
   * may be another project's. Undefined for the namespace's own objects, which the agent made in this
   * project. Absent where the engine does not know (then a kind must assume the worst).
   */
  imported?(kind: string, name: string): Remote | undefined;
  /** Per-run memo for lookups several manifests share (an external network by filter, a public flavor by name). */
  memo<T>(key: string, load: () => Promise<T>): Promise<T>;
  signal?: AbortSignal;
  /**
   * Progress by requeue (the controller): an adapter never waits for OpenStack;
   * it looks once and returns `Waiting` (kinds/kit/look-again.ts). Absent = it waits (standalone apply).
   */
  requeue?: boolean;
  /** Secret values a manifest names (VM user data); absent where none can be read (plan --base). */
  secrets?: SecretResolver;
  /**
   * `plan --base`: there is no cloud to ask. Ids are placeholders and lookups
   * (a flavor by name, an external network by filter) answer placeholders
   * named after what they look for, the same in both revisions.
   */
  offline?: boolean;
  /** The Sync's default signature policy of OCI Images (an Image's spec.verify wins). */
  imageVerify?: ImageVerify;
  /**
   * A partial pass (a push's changed manifests, a registry notification's
   * Images): what the last full pass learnt from Keystone is believed
   * without asking again (act/known-projects.ts; no images project yet).
   * The full pass asks again.
   */
  trustKnown?: boolean;
  /** What the Image kind remembers between runs, owned by the front end (kinds/kit/image-memory.ts). */
  images?: ImageMemory;
  /**
   * Manifests (addresses) to resolve again whatever their interval: the front
   * end's record of what a registry notification moved (EngineDeps.refresh).
   */
  refresh?: ReadonlySet<string>;
}

/** The OpenStack name of a manifest: spec.name, or metadata.name. */
export function openstackName(m: Manifest): string {
  return typeof m.spec.name === 'string' ? m.spec.name : m.metadata.name;
}

/** Copies the declared spec fields (renamed where the API names them differently). */
export function pick(spec: Record<string, unknown>, names: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [from, to] of Object.entries(names)) if (spec[from] !== undefined) out[to] = spec[from];
  return out;
}

export function refName(ref: unknown): string | undefined {
  const name = (ref as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}

/** What a plan shows for the id of an object that does not exist yet (adapters skip lookups by such an id). */
export function knownAfterApply(ref: string): string {
  return `(known after apply: ${ref})`;
}

export function isKnownAfterApply(id: string): boolean {
  return id.startsWith('(known after apply: ');
}

/** `plan --base`: the id of an object the base revision declares (it exists; nobody asks for its id). */
export function declaredId(ref: string): string {
  return `(id of ${ref})`;
}

/** `plan --base`: what an offline lookup answers (`public flavor m1.small`). */
export function lookedUpId(what: string): string {
  return `(id of ${what})`;
}

/** Any id that stands for an object instead of naming one: never sent to OpenStack. */
export function isPlaceholderId(id: string): boolean {
  return isKnownAfterApply(id) || id.startsWith('(id of ');
}

/**
 * What "the namespace's project owns this object" means, one entry per kind
 * (KindAdapter.ownership; the kit's entries in kinds/kit/ownership.ts, the table in docs/explanation/security.md). An
 * import (observe-only) needs the object to be the project's own or usable
 * by it (shared, public); an adoption (`import.adopt`), which writes our
 * marker and later updates and prunes it, needs it to be the project's own.
 * A kind whose objects carry no owner field is foreign for adoption unless
 * its entry proves otherwise.
 */
export interface Ownership {
  /** The rule in words: the docs table and every refusal quote it. */
  readonly rule: string;
  /** Where the object stands for the namespace's project. */
  standing(found: Remote, view: OwnershipView): Standing | Promise<Standing>;
  /** The Keystone project the object belongs to, when its kind names one (the fix a refusal suggests). */
  project?(raw: Record<string, unknown>): string | undefined;
}

/** `own`: the project's; `usable`: another's the project may use (never adopt); `foreign`: neither. `whose` finishes "the Flavor f …". */
export type Standing = { is: 'own' } | { is: 'usable' | 'foreign'; whose: string };

export interface OwnershipView {
  /** The namespace's context: its project, and the clients an entry reads more with (a flavor's access list). */
  ctx: AdapterContext;
  /** Whether a Keystone project name is one of this KupenStack's other namespaces' (key pair names carry it). */
  otherProject(name: string): boolean;
}
