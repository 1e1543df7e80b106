import { KupenstackError } from '../errors.ts';
import type { AdapterContext, Remote } from '../kinds/kit/adapter.ts';
import type { ImageMemory } from '../kinds/kit/image-memory.ts';
import type { ImageVerify } from '../model/kinds.generated.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { Project } from './project.ts';

/** A reference whose target has no OpenStack id yet; the engine retries the manifest once the target exists. */
export class PendingReference extends KupenstackError {
  readonly target: string;

  constructor(target: string) {
    super('ref.pending', `${target} does not exist in OpenStack yet`);
    this.target = target;
  }
}

export interface ProjectContext {
  ctx: AdapterContext;
  /** `Kind/name` → OpenStack id, filled by observation and by creates (`know`). */
  ids: Map<string, string>;
  /** `Kind/name` → the object itself, as observed or made, when the engine had it (`know`). */
  remotes: Map<string, Remote>;
  /** `Kind/name` → the imported object as observe read it (it may be another project's). */
  imports: Map<string, Remote>;
}

/**
 * `scopeProjectId`: the project whose token reads for this namespace (a plan
 * for a namespace without a project yet reads with the agent's own). The
 * planner answers references itself (plan/decide.ts); this context's `idOf`
 * throws PendingReference for an object that does not exist yet.
 */
export async function projectContext(
  cloud: OpenStackCloud,
  project: Project,
  owner: string,
  signal?: AbortSignal,
  scopeProjectId = project.id,
  secrets?: SecretResolver,
  imageVerify?: ImageVerify,
  trustKnown = false,
  images?: ImageMemory,
  refresh?: ReadonlySet<string>,
): Promise<ProjectContext> {
  const ids = new Map<string, string>();
  const remotes = new Map<string, Remote>();
  const imports = new Map<string, Remote>();
  const memos = new Map<string, Promise<unknown>>();
  const ctx: AdapterContext = {
    cloud,
    apis: await cloud.forProject(scopeProjectId),
    namespace: project.namespace,
    projectId: project.id,
    projectName: project.name,
    owner,
    signal,
    ...(secrets ? { secrets } : {}),
    ...(imageVerify ? { imageVerify } : {}),
    ...(trustKnown ? { trustKnown } : {}),
    ...(images ? { images } : {}),
    ...(refresh ? { refresh } : {}),
    idOf: (kind, name) => {
      const id = ids.get(`${kind}/${name}`);
      if (id === undefined) throw new PendingReference(`${kind}/${name}`);
      return id;
    },
    remoteOf: (kind, name) => remotes.get(`${kind}/${name}`),
    imported: (kind, name) => imports.get(`${kind}/${name}`),
    memo: <T>(key: string, load: () => Promise<T>): Promise<T> => {
      let p = memos.get(key);
      if (!p) {
        p = load();
        memos.set(key, p);
        p.catch(() => memos.delete(key));
      }
      return p as Promise<T>;
    },
  };
  return { ctx, ids, remotes, imports };
}

/** A manifest's object, observed or just made: its id answers references, the object itself remoteOf. */
export function know(pc: ProjectContext, ref: string, remote: Remote): void {
  pc.ids.set(ref, remote.id);
  pc.remotes.set(ref, remote);
}
