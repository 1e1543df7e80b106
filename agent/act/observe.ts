import type { KupenstackError } from '../errors.ts';
import { knownAfterApply, type AdapterContext, type CloudContext, type KindAdapter, type Remote } from '../kinds/kit/adapter.ts';
import type { Manifest } from '../model/manifest.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { ServiceType } from '../openstack/service.ts';
import type { Inventory } from '../plan/decide.ts';
import type { ImageMemory } from '../kinds/kit/image-memory.ts';
import type { ImageVerify } from '../model/kinds.generated.ts';
import { ownerTagPrefix } from '../ownership/marker.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { ResourceState } from '../status/state.ts';
import { pool } from '../util/concurrency.ts';
import { know, projectContext, type ProjectContext } from './context.ts';
import type { DependencyObjects } from './dependencies.ts';
import { resolveImports } from './imports.ts';
import { rememberProjects, trustedProjects } from './known-projects.ts';
import { ownedProjects } from './projects.ts';
import { type Project } from './project.ts';
import { projectNameOf } from './project-names.ts';
import { blockedNamespaces } from './no-project.ts';

/**
 * Where a manifest is reconciled. Namespaced kinds live in the namespace's
 * Keystone project; a manifest no provider takes (cluster-scoped kinds:
 * OpenStackCloud, Sync) is left to another loop and never reaches the engine.
 */
export interface ScopeProvider {
  /** The scope key of a manifest (its namespace), or undefined when this provider does not handle it. */
  scopeOf(m: Manifest, adapters: ReadonlyMap<string, KindAdapter>): string | undefined;
}

const projectScope: ScopeProvider = {
  scopeOf: (m, adapters) => (adapters.has(m.kind) && m.metadata.namespace ? m.metadata.namespace : undefined),
};

export interface ObserveOptions {
  cloud: OpenStackCloud;
  adapters: ReadonlyMap<string, KindAdapter>;
  owner: string;
  projectPrefix: string;
  prune: boolean;
  concurrency: number;
  resources: Record<string, ResourceState>;
  /** Only these namespaces (the in-cluster controller reconciles one at a time). */
  namespaces?: readonly string[];
  scope?: ScopeProvider;
  secrets?: SecretResolver;
  /** The Sync's default signature policy of OCI Images. */
  imageVerify?: ImageVerify | undefined;
  signal?: AbortSignal;
  /** The fast pass: the owner's projects as the last full pass listed them, when it saw them all (known-projects.ts). */
  trustKnownProjects?: boolean;
  /** What the Image kind remembers between runs (the front end's). */
  images?: ImageMemory;
  /** Images to resolve again whatever their interval (EngineDeps.refresh). */
  refresh?: ReadonlySet<string>;
  /** Namespace → Keystone project name where it is not prefix + namespace (standalone: the manifests' annotation, act/project-names.ts). */
  projectNames?: ReadonlyMap<string, string>;
  /** Namespaces labelled kupenstack.io/admin=true (the controller's): their imports keep the admin's reach (act/imports.ts). */
  adminNamespaces?: ReadonlySet<string>;
  /** Standalone: what the Syncs this one depends on made (their projects, their objects' ids). */
  dependencies?: DependencyObjects;
}

/** The live inventory plus the per-namespace contexts the executor acts through. */
export interface Observation {
  inventory: Inventory;
  /** Namespace → context; `future` ones have no project yet (the executor creates it). */
  scopes: Map<string, ProjectContext & { future: boolean }>;
  /** The declared manifests the engine handles, in the revision's order. */
  resources: Manifest[];
  /** Namespaces the declared manifests need a project for. */
  namespaces: string[];
  /** Every project this owner had when observed (the executor does not list them again). */
  projects: Project[];
  /** Projects of the Syncs this one depends on that it uses for namespaces it has none for (ObserveOptions.dependencies). */
  borrowed: Project[];
  /** Namespace → Keystone project name where it is not prefix + namespace (ObserveOptions.projectNames). */
  projectNames?: ReadonlyMap<string, string>;
  /** Namespaces that get no project: a new one could not hold the objects their manifests adopt (act/no-project.ts). */
  blocked: Map<string, KupenstackError>;
}

/** The catalog type of each adapter's service. */
const catalogType = { network: 'network', compute: 'compute', image: 'image', volume: 'volumev3' } as const satisfies Record<
  NonNullable<KindAdapter['service']>,
  ServiceType
>;

/** The agent's admin view of these projects, for a kind listed cloud-wide (KindAdapter.observeCloud). */
async function cloudContextOf(needed: readonly Project[], opts: ObserveOptions): Promise<CloudContext> {
  const projects = new Map(needed.map((p) => [p.id, { namespace: p.namespace, name: p.name }]));
  return {
    cloud: opts.cloud,
    apis: await opts.cloud.adminApis(),
    owner: opts.owner,
    projects,
    signal: opts.signal,
    ...(opts.secrets ? { secrets: opts.secrets } : {}),
  };
}

/**
 * Observe, read-only: the owner's projects (one list), then one list per
 * kind cloud-wide (or per project, for a kind that cannot be listed
 * cloud-wide or when one project is observed), and the objects declared
 * imports name. Namespaces with
 * no project yet read with the agent's own scope and see nothing; nothing is
 * created here, so a plan and the first half of an apply write nothing.
 */
export async function observe(manifests: readonly Manifest[], opts: ObserveOptions): Promise<Observation> {
  const { adapters } = opts;
  const scope = opts.scope ?? projectScope;
  const inScope = (ns: string | undefined): boolean => ns !== undefined && (!opts.namespaces || opts.namespaces.includes(ns));
  const resources = manifests.filter((m) => inScope(scope.scopeOf(m, adapters)));
  const namespaces = [...new Set(resources.map((m) => m.metadata.namespace!))];
  const { projects, allProjects, trusted, borrowed } = await projectsOf(namespaces, inScope, opts);
  const { scopes, creates } = await scopesOf(resources, namespaces, projects, opts);
  knowDependencies(scopes, opts.dependencies);
  const { owned, duplicates, total } = await listOwned(resources, projects, scopes, trusted, opts);
  const { imports, importErrors } = await resolveImports(resources, scopes, {
    cloud: opts.cloud,
    owner: opts.owner,
    adapters,
    ...(opts.adminNamespaces ? { adminNamespaces: opts.adminNamespaces } : {}),
    otherProject: (name, ctx) =>
      name !== ctx.projectName && (allProjects.some((p) => p.name === name) || (opts.projectPrefix !== '' && name.startsWith(opts.projectPrefix))),
  });
  // A project made now could not hold what the namespace adopts: no project, and each adoption says why and what to write.
  const blocked = await blockedNamespaces(
    resources,
    creates,
    importErrors,
    (ns) => scopes.get(ns)!.ctx,
    adapters,
    (ns) => projectNameOf(ns, opts.projectPrefix, opts.projectNames),
  );
  const inventory: Inventory = {
    owned,
    duplicates,
    imports,
    importErrors,
    total,
    offline: false,
    context: (m, idOf) => {
      const ns = scope.scopeOf(m, adapters);
      const pc = ns === undefined ? undefined : scopes.get(ns);
      return pc ? { ...pc.ctx, idOf } : undefined;
    },
    resources: opts.resources,
    detached: (address) => opts.resources[address]?.onDelete === 'detach',
    ...(opts.dependencies ? { provided: opts.dependencies.ids } : {}),
  };
  return {
    inventory,
    scopes,
    resources,
    namespaces,
    projects: allProjects,
    borrowed,
    blocked,
    ...(opts.projectNames ? { projectNames: opts.projectNames } : {}),
  };
}

/** The owner's projects (one list, or the last full pass's when trusted), and those of them this pass observes, by namespace. */
async function projectsOf(
  namespaces: readonly string[],
  inScope: (ns: string | undefined) => boolean,
  opts: ObserveOptions,
): Promise<{ projects: Map<string, Project>; allProjects: Project[]; trusted: boolean; borrowed: Project[] }> {
  const { cloud, owner } = opts;
  const projects = new Map<string, Project>();
  const trusted = opts.trustKnownProjects ? trustedProjects(cloud, owner, namespaces) : undefined;
  const allProjects = trusted ?? (await ownedProjects(cloud, owner));
  if (!trusted) rememberProjects(cloud, owner, allProjects);
  for (const p of allProjects) if (inScope(p.namespace) && (opts.prune || namespaces.includes(p.namespace))) projects.set(p.namespace, p);
  // A namespace a dependency has a project for and this Sync has not: the dependency's, borrowed (never its to delete).
  const borrowed = (opts.dependencies?.projects ?? []).filter((p) => namespaces.includes(p.namespace) && inScope(p.namespace) && !projects.has(p.namespace));
  for (const p of borrowed) projects.set(p.namespace, p);
  return { projects, allProjects, trusted: trusted !== undefined, borrowed };
}

/** A reference to an object a dependency applied answers with its id, in the namespace's context (no remote: it is not this Sync's). */
function knowDependencies(scopes: ReadonlyMap<string, ProjectContext>, deps: DependencyObjects | undefined): void {
  for (const [address, id] of deps?.ids ?? []) {
    const [ns, kind, name] = address.split('/');
    const pc = ns === undefined ? undefined : scopes.get(ns);
    if (pc && kind && name && !pc.ids.has(`${kind}/${name}`)) pc.ids.set(`${kind}/${name}`, id);
  }
}

/**
 * A context per namespace: its project's, or a `future` one (the agent's own scope) for a namespace with no project yet;
 * and which of those apply would create (none exists under their name).
 */
async function scopesOf(
  resources: readonly Manifest[],
  namespaces: readonly string[],
  projects: ReadonlyMap<string, Project>,
  opts: ObserveOptions,
): Promise<{ scopes: Observation['scopes']; creates: Set<string> }> {
  const { cloud, owner } = opts;
  const scopes = new Map<string, ProjectContext & { future: boolean }>();
  const missing = namespaces.filter((n) => !projects.has(n));
  const own = missing.length > 0 ? ((await cloud.whoami()).projectId ?? '') : '';
  // A namespace that adopts (import.adopt) may name a project that exists without our tags: apply takes it
  // over (act/projects.ts). Its id is read here, without a write, so adopted objects are judged as that project's, not foreign.
  const adopting = new Set(resources.filter((m) => (m.spec.import as { adopt?: boolean } | undefined)?.adopt === true).map((m) => m.metadata.namespace!));
  const creates = new Set<string>();
  for (const ns of missing) {
    const name = projectNameOf(ns, opts.projectPrefix, opts.projectNames);
    const existing = adopting.has(ns) ? await untaggedProject(cloud, name) : undefined;
    if (existing === undefined) creates.add(ns);
    const future: Project = { namespace: ns, id: existing ?? knownAfterApply(`project ${name}`), name };
    scopes.set(ns, {
      ...(await projectContext(cloud, future, owner, opts.signal, own, opts.secrets, opts.imageVerify, opts.trustKnownProjects, opts.images, opts.refresh)),
      future: true,
    });
  }
  for (const p of projects.values())
    scopes.set(p.namespace, {
      ...(await projectContext(cloud, p, owner, opts.signal, p.id, opts.secrets, opts.imageVerify, opts.trustKnownProjects, opts.images, opts.refresh)),
      future: false,
    });
  return { scopes, creates };
}

/** Everything carrying this owner's marker, by address; a second object with one marker is a duplicate. */
async function listOwned(
  resources: readonly Manifest[],
  projects: ReadonlyMap<string, Project>,
  scopes: Observation['scopes'],
  trusted: boolean,
  opts: ObserveOptions,
): Promise<Pick<Inventory, 'owned' | 'duplicates' | 'total'>> {
  const { cloud, adapters, owner } = opts;
  const declaredKinds = new Map<string, Set<string>>();
  for (const m of resources) declaredKinds.set(m.metadata.namespace!, (declaredKinds.get(m.metadata.namespace!) ?? new Set<string>()).add(m.kind));
  const owned = new Map<string, Remote>();
  const duplicates: { address: string; remote: Remote }[] = [];
  let total = 0;
  const keep = (p: Project, remotes: readonly Remote[]): void => {
    const pc = scopes.get(p.namespace)!;
    for (const remote of remotes) {
      if (!remote.marker || remote.marker.owner !== owner) continue;
      const address = `${p.namespace}/${remote.marker.ref}`;
      total++;
      const first = owned.get(address);
      if (!first) owned.set(address, remote);
      else if (remote.id === opts.resources[address]?.id) {
        // Two objects with one marker (a create retried after a lost answer): keep the one the last run recorded, which is what references were given.
        duplicates.push({ address, remote: first });
        owned.set(address, remote);
      } else duplicates.push({ address, remote });
      know(pc, remote.marker.ref, owned.get(address)!);
    }
  };
  // A kind several projects need is listed once cloud-wide (calls independent of the number of projects); one project alone (the
  // controller's one namespace) keeps the project filter; a partial pass trusting a full pass of this process, what its manifests may own.
  const work: (() => Promise<void>)[] = [];
  for (const a of adapters.values()) {
    const needed = [...projects.values()].filter((p) => opts.prune || declaredKinds.get(p.namespace)?.has(a.kind));
    if (needed.length > 0 && !(await listable(cloud, a, needed, declaredKinds))) continue;
    if (trusted && !opts.prune && a.observeSome)
      work.push(...needed.map((p) => observeSomeOf(a, p, resources, opts.resources, scopes.get(p.namespace)!.ctx, keep)));
    else if (needed.length > 1 && a.observeCloud) {
      work.push(async () => {
        const byId = new Map(needed.map((p) => [p.id, p]));
        const found = await a.observeCloud!(await cloudContextOf(needed, opts));
        for (const [projectId, remotes] of found) {
          const p = byId.get(projectId);
          if (p) keep(p, remotes);
        }
      });
    } else for (const p of needed) work.push(async () => keep(p, await a.observe(scopes.get(p.namespace)!.ctx)));
  }
  await pool(work, opts.concurrency, (w) => w());
  return { owned, duplicates, total };
}

/**
 * A service the catalog does not list (a cloud installed without Cinder) holds nothing of ours: its kinds
 * are listed only when declared, whose calls then name the missing endpoint.
 */
async function listable(
  cloud: OpenStackCloud,
  a: KindAdapter,
  needed: readonly Project[],
  declaredKinds: ReadonlyMap<string, ReadonlySet<string>>,
): Promise<boolean> {
  if (!a.service || needed.some((p) => declaredKinds.get(p.namespace)?.has(a.kind))) return true;
  return cloud.hasService(catalogType[a.service]);
}

/** KindAdapter.observeSome of one project (issue 33): the kind's manifests there, and the ids runs recorded for them. */
function observeSomeOf(
  a: KindAdapter,
  p: Project,
  resources: readonly Manifest[],
  recorded: Readonly<Record<string, ResourceState>>,
  ctx: AdapterContext,
  keep: (p: Project, remotes: readonly Remote[]) => void,
): () => Promise<void> {
  const manifests = resources.filter((m) => m.kind === a.kind && m.metadata.namespace === p.namespace);
  const ids = manifests.flatMap((m) => recorded[m.address]?.id ?? []);
  return async () => keep(p, await a.observeSome!(ctx, { manifests, ids }));
}

/** The id of a project of this name that no owner has tagged: one apply can take over (act/projects.ts). */
async function untaggedProject(cloud: OpenStackCloud, name: string): Promise<string | undefined> {
  const found = await cloud.identity.list<{ id: string; tags?: string[] }>('/projects', 'projects', { name });
  const [one] = found.filter((p) => !p.tags?.some((t) => t.startsWith(ownerTagPrefix)));
  return found.length === 1 ? one?.id : undefined;
}
