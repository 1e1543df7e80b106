import { KupenstackError } from '../errors.ts';
import type { AdapterContext, KindAdapter } from '../kinds/kit/adapter.ts';
import { where, type Manifest } from '../model/manifest.ts';
import { projectAnnotation } from './project-names.ts';

/**
 * Why a namespace gets no project: its manifests adopt objects (import.adopt) that a project made now
 * could not hold — they are another project's (a cloud exported under a name apply does not map to
 * this namespace, issue 46). Creating that empty project would only have every adoption refused, and
 * a second apply then finds none of the ids visible. The message names the adopting manifest's line,
 * the project the object belongs to, and the annotation that maps the namespace to it.
 */
export async function noProjectToAdopt(m: Manifest, adapter: KindAdapter, ctx: AdapterContext, wouldCreate: string, cause: unknown): Promise<KupenstackError> {
  const owner = await ownerOf(m, adapter, ctx);
  const fix = owner
    ? `if namespace ${m.metadata.namespace} stands for project "${owner.name}", add the annotation ${projectAnnotation}: "${owner.name}" to its manifests' metadata ` +
      `(kupenstack export writes it: export again into a new folder)`
    : `if namespace ${m.metadata.namespace} stands for an existing project, name it with the annotation ${projectAnnotation}: "<project name>" in its manifests' metadata`;
  return new KupenstackError(
    'import.no-project',
    `${where(m, ['spec', 'import'])}: namespace ${m.metadata.namespace} adopts existing objects, but Keystone has no project "${wouldCreate}" for it, and apply does not create one: ` +
      `a new project could not hold ${owner ? `what project "${owner.name}" (${owner.id}) owns` : 'objects that already exist'}; ${fix}`,
    { cause },
  );
}

/** The Keystone project of the object the manifest adopts, read with the agent's admin view; undefined when it cannot be told. */
async function ownerOf(m: Manifest, adapter: KindAdapter, ctx: AdapterContext): Promise<{ id: string; name: string } | undefined> {
  const id = (m.spec.import as { id?: string }).id;
  const found = id ? await adapter.get?.(ctx, id).catch(() => undefined) : undefined;
  const raw = found?.raw ?? {};
  // The kind's own project field (kinds/kit/ownership.ts): Cinder's snapshots name theirs under an extension's key.
  const projectId = adapter.ownership.project?.(raw);
  // ProjectQuota imports the project itself by id.
  const target = projectId ?? (m.kind === 'ProjectQuota' ? id : undefined);
  if (!target) return undefined;
  const project = await ctx.cloud.identity.get<{ project: { id: string; name: string } }>(`/projects/${target}`).catch(() => undefined);
  return project ? { id: project.project.id, name: project.project.name } : undefined;
}

const adopting = (m: Manifest): boolean => (m.spec.import as { adopt?: boolean } | undefined)?.adopt === true;

/**
 * The namespaces apply would make a project for (`creates`) whose adoptions failed: each gets no project, and
 * its adoptions' errors become the one that says why (import.no-project). `importErrors` is updated in place.
 */
export async function blockedNamespaces(
  resources: readonly Manifest[],
  creates: ReadonlySet<string>,
  importErrors: Map<string, unknown>,
  ctxOf: (ns: string) => AdapterContext,
  adapters: ReadonlyMap<string, KindAdapter>,
  nameOf: (ns: string) => string,
): Promise<Map<string, KupenstackError>> {
  const blocked = new Map<string, KupenstackError>();
  for (const m of resources) {
    const ns = m.metadata.namespace!;
    if (!creates.has(ns) || blocked.has(ns) || !adopting(m) || !importErrors.has(m.address)) continue;
    blocked.set(ns, await noProjectToAdopt(m, adapters.get(m.kind)!, ctxOf(ns), nameOf(ns), importErrors.get(m.address)));
  }
  for (const m of resources) {
    const err = blocked.get(m.metadata.namespace!);
    if (err && adopting(m)) importErrors.set(m.address, err);
  }
  return blocked;
}
