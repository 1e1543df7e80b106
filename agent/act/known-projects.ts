import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { Project } from './project.ts';

/**
 * What the last full pass learned from Keystone about an owner's projects,
 * kept with the long-lived client (the agent has one per Sync, so it lives
 * as long as the client's tokens): the projects, and those where the agent's
 * user was seen holding its role. The fast pass of a push trusts it instead
 * of asking Keystone again — three of its five calls before the first write
 * otherwise. A full pass always asks again and refreshes it. A project
 * deleted or a role revoked since fails the fast pass (its calls are refused);
 * the full pass that follows sees why.
 */
export interface KnownProjects {
  projects: Project[];
  /** Project ids where the role assignment was seen or made. */
  granted: Set<string>;
}

const byClient = new WeakMap<OpenStackCloud, Map<string, KnownProjects>>();

function knownProjects(cloud: OpenStackCloud, owner: string): KnownProjects | undefined {
  return byClient.get(cloud.base)?.get(owner);
}

/** Records the owner's projects as just listed; grants seen before stay while their project does. */
export function rememberProjects(cloud: OpenStackCloud, owner: string, projects: readonly Project[]): void {
  let owners = byClient.get(cloud.base);
  if (!owners) byClient.set(cloud.base, (owners = new Map<string, KnownProjects>()));
  const ids = new Set(projects.map((p) => p.id));
  const granted = new Set([...(owners.get(owner)?.granted ?? [])].filter((id) => ids.has(id)));
  owners.set(owner, { projects: [...projects], granted });
}

/** Records projects where the agent's user holds its role (listed or just granted), and projects just created. */
export function rememberGrants(cloud: OpenStackCloud, owner: string, projects: readonly Project[]): void {
  if (!knownProjects(cloud, owner)) rememberProjects(cloud, owner, projects);
  const known = knownProjects(cloud, owner)!;
  for (const p of projects) {
    if (!known.projects.some((k) => k.id === p.id)) known.projects.push(p);
    known.granted.add(p.id);
  }
}

/** The owner's known projects when each of these namespaces has one where the role was seen; otherwise undefined (ask Keystone). */
export function trustedProjects(cloud: OpenStackCloud, owner: string, namespaces: readonly string[]): Project[] | undefined {
  const known = knownProjects(cloud, owner);
  if (!known) return undefined;
  const ok = namespaces.every((ns) => known.projects.some((p) => p.namespace === ns && known.granted.has(p.id)));
  return ok ? [...known.projects] : undefined;
}
