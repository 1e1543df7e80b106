import type { OpenStackCloud } from '../../openstack/cloud.ts';
import { ownerTag } from '../../ownership/marker.ts';

/**
 * The last step of deleting a namespace, after the engine pruned what the
 * agent created in its project: the Keystone project goes too, but only one
 * that carries this owner's tag and this namespace's (a project the agent
 * did not create is never deleted). Returns the id deleted, if any.
 */
export async function deleteNamespaceProject(cloud: OpenStackCloud, owner: string, namespace: string): Promise<string | undefined> {
  const projects = await cloud.identity.list<{ id: string; tags?: string[] }>('/projects', 'projects', { tags: ownerTag(owner) });
  const mine = projects.find((p) => p.tags?.includes(`kupenstack-namespace:${namespace}`) && p.tags.includes(ownerTag(owner)));
  if (!mine) return undefined;
  await cloud.identity.remove(`/projects/${mine.id}`);
  return mine.id;
}
