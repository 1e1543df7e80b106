import { kindExports } from '../kinds/registry.ts';
import type { ExportScope, KindExport } from '../kinds/kit/export.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { ExportError } from './errors.ts';
import { manifestName, namespaceName } from './names.ts';

/** One manifest as `export` writes it (apiVersion is the writer's). */
export interface ExportedManifest {
  kind: string;
  name: string;
  namespace: string;
  spec: Record<string, unknown>;
}

export interface ExportedNamespace {
  namespace: string;
  project: { id: string; name: string };
  manifests: ExportedManifest[];
}

export interface ExportResult {
  namespaces: ExportedNamespace[];
  /** Objects left out and why (`namespace/Kind/id: reason`). */
  skipped: string[];
  /** What an exported manifest leaves to the user (`namespace/Kind/id: what`): user data, which may hold secrets, is one. */
  notes: string[];
  /** OpenStack calls per `service METHOD /collection`, counted at the HTTP layer. */
  calls: Record<string, number>;
}

export interface ExportOptions {
  cloud: OpenStackCloud;
  /** Keystone project names or ids. */
  projects: readonly string[];
  /** The prefix Keystone project names carry (config `projectPrefix`): stripped to make the namespace. */
  projectPrefix: string;
  /** Namespace overrides: project name or id → namespace. */
  namespaces?: ReadonlyMap<string, string>;
  signal?: AbortSignal;
}

interface Listed {
  kind: KindExport;
  raw: Record<string, unknown>;
  id: string;
  name: string;
  skipped?: string;
}

/** What an export tallies as it goes: objects left out, and its calls. */
export interface ExportTally {
  /** Objects left out and why (`namespace/Kind/id: reason`). */
  skipped: string[];
  /** What an exported manifest leaves to the user (`namespace/Kind/id: what`). */
  notes: string[];
  /** Calls per `service METHOD /collection` (`network GET /ports: 1`), counted where the requests leave (the cloud's counters). */
  calls: Record<string, number>;
}

/**
 * Reads the projects through each kind's export knowledge and returns their
 * manifests: every object of the project becomes an adoption (`import: {id,
 * adopt: true}`) with its references by manifest name; what lies outside the
 * project (another project's shared network, the default group Neutron made)
 * becomes an observe-only import in the namespace. Reads only, nothing
 * written. Several projects: one cloud-wide list per kind, split by project
 * (calls per kind, not per project or object); Nova's and Cinder's quotas
 * alone are read per project (they have no cloud-wide list). Secrets are
 * never written: no user data (Nova shows it to an admin; a note says where
 * it stays), no private key, no password.
 */
export async function exportProjects(opts: ExportOptions): Promise<ExportResult> {
  const tally: ExportTally = { skipped: [], notes: [], calls: {} };
  const namespaces: ExportedNamespace[] = [];
  for await (const ns of exportNamespaces(opts, tally)) namespaces.push(ns);
  return { namespaces, ...tally };
}

/**
 * The export one namespace at a time, so a writer can put each on disk and let
 * it go (a cloud of 10 000 objects is not held twice as manifests). `tally`
 * is complete when the iteration ends.
 */
export async function* exportNamespaces(opts: ExportOptions, tally: ExportTally): AsyncGenerator<ExportedNamespace> {
  const counters = opts.cloud.counters;
  const before = counters.byCollection();
  const settle = (): void => {
    for (const [k, n] of Object.entries(counters.byCollection())) if (n - (before[k] ?? 0) > 0) tally.calls[k] = n - (before[k] ?? 0);
  };
  try {
    yield* namespacesOf(opts, tally);
  } finally {
    settle();
  }
}

async function* namespacesOf(opts: ExportOptions, tally: ExportTally): AsyncGenerator<ExportedNamespace> {
  const admin = await opts.cloud.adminApis();
  const projects = await resolveProjects(opts);
  // Shared networks of other projects, for readable names of the imports that stand for them.
  const shared = await admin.network.list<Record<string, unknown>>('/networks', 'networks', { shared: true });
  const memos = new Map<string, Promise<unknown>>();
  const memo = <T>(key: string, load: () => Promise<T>): Promise<T> => {
    if (!memos.has(key)) memos.set(key, load());
    return memos.get(key) as Promise<T>;
  };
  const cloudWide = projects.length > 1;
  const seenNamespaces = new Set<string>();
  for (const project of projects) {
    opts.signal?.throwIfAborted();
    const namespace = namespaceOf(project, opts, seenNamespaces);
    const byKind = new Map<string, Record<string, unknown>[]>();
    const scope: ExportScope = {
      ...admin,
      loadBalancer: opts.cloud.client('load-balancer'),
      memo,
      projectId: project.id,
      cloudWide,
      listed: (kind) => byKind.get(kind) ?? [],
      ref: () => '',
    };
    const lists = await Promise.all(kindExports.map(async (k) => [k, await k.list(scope)] as const));
    for (const [k, items] of lists) byKind.set(k.kind, items);

    // Names first (references need every name), then specs.
    const taken = new Map<string, Set<string>>();
    const takenOf = (kind: string): Set<string> => taken.get(kind) ?? taken.set(kind, new Set()).get(kind)!;
    const objects = await nameObjects(lists, scope, takenOf);
    const imports: ExportedManifest[] = [];
    scope.ref = referrer(objects, shared, namespace, takenOf, imports);
    const manifests = manifestsOf(objects, namespace, scope, tally);
    yield { namespace, project, manifests: [...imports, ...manifests] };
  }
}

/** A project's namespace: mapped, or its name without the prefix; two projects never share one. */
function namespaceOf(project: { id: string; name: string }, opts: ExportOptions, seen: Set<string>): string {
  const namespace = opts.namespaces?.get(project.name) ?? opts.namespaces?.get(project.id) ?? namespaceName(project.name, opts.projectPrefix);
  if (!namespace)
    throw new ExportError(
      'export.namespace',
      `project ${project.name} (${project.id}) gives no valid namespace name; map it with --namespace ${project.name}=NAME`,
    );
  if (seen.has(namespace))
    throw new ExportError(
      'export.namespace',
      `projects ${project.name} and another one both become namespace ${namespace}; map one of them with --namespace ${project.name}=NAME`,
    );
  seen.add(namespace);
  return namespace;
}

/** Every listed object by `Kind/id`, with its manifest name (in name order, so names are stable), or why it is left out. */
async function nameObjects(
  lists: readonly (readonly [KindExport, Record<string, unknown>[]])[],
  scope: ExportScope,
  takenOf: (kind: string) => Set<string>,
): Promise<Map<string, Listed>> {
  const objects = new Map<string, Listed>();
  for (const [k, items] of lists) {
    const key = (x: Record<string, unknown>): string => `${typeof x.name === 'string' ? x.name : ''}\u0000${String(x.id)}`;
    for (const raw of [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))) {
      const id = String(raw.id);
      const reason = k.skip?.(raw, scope) ?? (await k.unsafe?.(raw, scope));
      if (reason) {
        objects.set(`${k.kind}/${id}`, { kind: k, raw, id, name: '', skipped: reason });
        continue;
      }
      objects.set(`${k.kind}/${id}`, { kind: k, raw, id, name: manifestName(k.kind, raw.name, id, takenOf(k.kind)) });
    }
  }
  return objects;
}

/** A reference by manifest name: an exported object's, else an observe-only import by id, made once and added to `imports`. */
function referrer(
  objects: ReadonlyMap<string, Listed>,
  shared: readonly Record<string, unknown>[],
  namespace: string,
  takenOf: (kind: string) => Set<string>,
  imports: ExportedManifest[],
): ExportScope['ref'] {
  const importNames = new Map<string, string>();
  return (kind, id) => {
    const own = objects.get(`${kind}/${id}`);
    if (own && !own.skipped) return own.name;
    const key = `${kind}/${id}`;
    const known = importNames.get(key);
    if (known) return known;
    // Outside the export (another project's, or made by OpenStack): an observe-only import by id.
    const raw = own?.raw ?? (kind === 'Network' ? shared.find((n) => n.id === id) : undefined);
    const name = manifestName(kind, raw?.name, id, takenOf(kind));
    importNames.set(key, name);
    imports.push({ kind, name, namespace, spec: { managementPolicy: 'unmanaged', import: { id } } });
    return name;
  };
}

/** Each named object as a manifest: an adoption with its spec, or observe-only; what is left out or left to the user goes to the tally. */
function manifestsOf(objects: ReadonlyMap<string, Listed>, namespace: string, scope: ExportScope, tally: ExportTally): ExportedManifest[] {
  const manifests: ExportedManifest[] = [];
  for (const o of objects.values()) {
    if (o.skipped) {
      tally.skipped.push(`${namespace}/${o.kind.kind}/${o.id}: ${o.skipped}`);
      continue;
    }
    const observeOnly = o.kind.observeOnly ?? o.kind.observeOnlyWhy?.(o.raw, scope);
    if (observeOnly) {
      if (!o.kind.observeOnly) tally.skipped.push(`${namespace}/${o.kind.kind}/${o.id}: observe-only, ${observeOnly}`);
      manifests.push({ kind: o.kind.kind, name: o.name, namespace, spec: { managementPolicy: 'unmanaged', import: { id: o.id } } });
      continue;
    }
    const spec = o.kind.spec(o.raw, scope);
    const note = o.kind.note?.(o.raw);
    if (note) tally.notes.push(`${namespace}/${o.kind.kind}/${o.name}: ${note}`);
    // The OpenStack name is kept where the manifest name had to differ.
    const head: Record<string, unknown> = typeof o.raw.name === 'string' && o.raw.name !== o.name ? { name: o.raw.name } : {};
    manifests.push({ kind: o.kind.kind, name: o.name, namespace, spec: { import: { id: o.id, adopt: true }, ...head, ...spec } });
  }
  return manifests;
}

async function resolveProjects(opts: ExportOptions): Promise<{ id: string; name: string }[]> {
  const all = await opts.cloud.identity.list<{ id: string; name: string }>('/projects', 'projects');
  return opts.projects.map((p) => {
    const byId = all.find((x) => x.id === p);
    if (byId) return { id: byId.id, name: byId.name };
    const byName = all.filter((x) => x.name === p);
    if (byName.length === 0)
      throw new ExportError('export.project-not-found', `no Keystone project has the name or id "${p}"; list them with \`openstack project list\``);
    if (byName.length > 1) throw new ExportError('export.project-ambiguous', `${byName.length} projects are named "${p}" (in different domains); give its id`);
    return { id: byName[0]!.id, name: byName[0]!.name };
  });
}
