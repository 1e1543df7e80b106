import { KupenstackError } from '../errors.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { OpenStackError } from '../openstack/errors.ts';
import { ownerTag, ownerTagPrefix } from '../ownership/marker.ts';
import { rememberGrants, trustedProjects } from './known-projects.ts';

import type { Project } from './project.ts';
import { projectNameOf } from './project-names.ts';

export interface ProjectOptions {
  owner: string;
  /** Keystone project name = prefix + namespace. */
  prefix: string;
  domainId: string;
  /** The role the agent's user gets in each project, to act inside it. */
  role: string;
  /** The fast pass: where the last full pass saw every project and role grant, Keystone is not asked again (known-projects.ts). */
  trustKnown?: boolean;
  /**
   * Namespaces whose manifests adopt existing objects (`import.adopt`): their project may exist
   * already without our tags (a cloud built before KupenStack); it is taken over by adding them.
   */
  adopt?: ReadonlySet<string>;
  /** Namespace → Keystone project name where it is not prefix + namespace (act/project-names.ts). */
  names?: ReadonlyMap<string, string>;
  /** Projects of the Syncs this one depends on, used for namespaces it has none for: neither created nor remembered as its own. */
  borrowed?: readonly Project[];
}

interface KeystoneProject {
  id: string;
  name: string;
  tags?: string[];
  domain_id: string;
}

const namespaceTag = (ns: string): string => `kupenstack-namespace:${ns}`;

/**
 * Namespace == project: finds the projects this owner created (one list by
 * tag), creates the missing ones with the owner's tags in the create call,
 * and makes sure the agent's user holds `role` in each (one list of its
 * role assignments, then a PUT only where missing), so later calls run with a token scoped to the project.
 */
export async function ensureProjects(
  cloud: OpenStackCloud,
  namespaces: string[],
  opts: ProjectOptions,
  known?: readonly Project[],
): Promise<Map<string, Project>> {
  const identity = cloud.identity;
  const byNamespace = new Map<string, Project>();
  // `known`: the owner's projects as just listed (observe); a project created since is adopted on the create's conflict.
  for (const p of known ?? (await ownedProjects(cloud, opts.owner))) byNamespace.set(p.namespace, p);
  const borrowed = new Set<string>();
  for (const p of opts.borrowed ?? [])
    if (!byNamespace.has(p.namespace)) {
      byNamespace.set(p.namespace, p);
      borrowed.add(p.id);
    }
  const wanted = [...new Set(namespaces)].sort();
  if (wanted.length === 0) return byNamespace;
  if (opts.trustKnown) {
    const trusted = trustedProjects(cloud, opts.owner, wanted);
    if (trusted && wanted.every((ns) => trusted.some((p) => p.namespace === ns && p.id === byNamespace.get(ns)?.id))) return byNamespace;
  }
  const me = await cloud.whoami();
  const roleId = me.roles.find((r) => r.name === opts.role)?.id ?? (await findRole(cloud, opts.role));
  // Where the agent holds the role already: one list for every project, not one probe per project;
  // none when every project is about to be made (a new project has no assignment: a first apply).
  const existing = wanted.filter((ns) => byNamespace.has(ns));
  const assignments =
    existing.length === 0
      ? []
      : await identity.list<{ scope?: { project?: { id?: string } } }>('/role_assignments', 'role_assignments', { 'user.id': me.userId, 'role.id': roleId });
  const granted = new Set(assignments.flatMap((a) => (a.scope?.project?.id ? [a.scope.project.id] : [])));
  for (const ns of wanted) {
    let project = byNamespace.get(ns);
    if (!project) {
      project = await createProject(cloud, ns, opts);
      byNamespace.set(ns, project);
    }
    if (!granted.has(project.id)) await identity.put(`/projects/${project.id}/users/${me.userId}/roles/${roleId}`, undefined, [204]);
  }
  rememberGrants(
    cloud,
    opts.owner,
    wanted.map((ns) => byNamespace.get(ns)!).filter((p) => !borrowed.has(p.id)),
  );
  return byNamespace;
}

/** Every project this owner created, including those of namespaces no longer declared. */
export async function ownedProjects(cloud: OpenStackCloud, owner: string): Promise<Project[]> {
  const owned = await cloud.identity.list<KeystoneProject>('/projects', 'projects', { tags: ownerTag(owner) });
  return owned.flatMap((p) => {
    const ns = p.tags?.find((t) => t.startsWith('kupenstack-namespace:'))?.slice('kupenstack-namespace:'.length);
    return ns ? [{ namespace: ns, id: p.id, name: p.name }] : [];
  });
}

async function createProject(cloud: OpenStackCloud, ns: string, opts: ProjectOptions): Promise<Project> {
  const name = projectNameOf(ns, opts.prefix, opts.names);
  const body = {
    project: {
      name,
      domain_id: opts.domainId,
      description: `Kubernetes namespace ${ns}, managed by KupenStack (${opts.owner})`,
      enabled: true,
      tags: [ownerTag(opts.owner), namespaceTag(ns)],
    },
  };
  if (opts.adopt?.has(ns)) {
    // A namespace that adopts looks first (a read, where a create would meet a 409 on a project that exists).
    const [existing] = await cloud.identity.list<KeystoneProject>('/projects', 'projects', { name, domain_id: opts.domainId });
    if (existing && !existing.tags?.some((t) => t.startsWith(ownerTagPrefix))) return takeOver(cloud, existing, ns, opts.owner);
  }
  // Keystone refuses a second project of the same name in a domain, so a create repeated after a lost
  // answer cannot duplicate: it meets a 409 and the lookup adopts what the first attempt made.
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await cloud.identity.post<{ project: KeystoneProject }>('/projects', body, [201]);
      return { namespace: ns, id: res.project.id, name };
    } catch (err) {
      if (!(err instanceof OpenStackError) || !(err.conflict || err.transient)) throw err;
      // Created by an earlier run that died before listing it, by this call whose answer was lost, or a name clash with a project we do not own.
      const [existing] = await cloud.identity.list<KeystoneProject>('/projects', 'projects', { name, domain_id: opts.domainId });
      if (existing?.tags?.includes(ownerTag(opts.owner))) return { namespace: ns, id: existing.id, name };
      if (err.conflict && existing && opts.adopt?.has(ns) && !existing.tags?.some((t) => t.startsWith(ownerTagPrefix)))
        return takeOver(cloud, existing, ns, opts.owner);
      if (err.conflict) {
        throw new KupenstackError(
          'project.name-taken',
          `Keystone project "${name}" for namespace "${ns}" already exists and is not owned by KupenStack owner "${opts.owner}"; ` +
            `KupenStack never takes over objects it did not create. Choose another projectPrefix or rename the namespace`,
          { cause: err },
        );
      }
      if (attempt >= 3) throw err;
    }
  }
}

/** A project made without KupenStack, taken over as its objects are: the owner's tags are the only change. */
async function takeOver(cloud: OpenStackCloud, existing: KeystoneProject, ns: string, owner: string): Promise<Project> {
  for (const tag of [namespaceTag(ns), ownerTag(owner)])
    await cloud.identity.put(`/projects/${existing.id}/tags/${encodeURIComponent(tag)}`, undefined, [201, 204]);
  return { namespace: ns, id: existing.id, name: existing.name };
}

/** The role's id by name; the agent's own token usually names it already (an admin holds member through the implied roles), so this is the fallback. */
async function findRole(cloud: OpenStackCloud, role: string): Promise<string> {
  const [found] = await cloud.identity.list<{ id: string }>('/roles', 'roles', { name: role });
  if (!found) throw new KupenstackError('project.role-missing', `Keystone has no role "${role}"; create it or configure another role for the agent`);
  return found.id;
}
