import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { Project } from './project.ts';

/**
 * What keeps a project of a namespace that left the revision alive: anything
 * in it that pruning did not remove (an object someone made by hand, one the
 * mass-delete guard held, one whose delete failed). Neutron's own default
 * security group does not count. One list per service, filtered to the project.
 */
async function leftInProject(cloud: OpenStackCloud, projectId: string): Promise<string[]> {
  const apis = await cloud.adminApis();
  const found: string[] = [];
  const count = async (what: string, list: () => Promise<{ name?: unknown }[]>): Promise<void> => {
    const items = await list();
    if (items.length > 0) found.push(`${items.length} ${what}`);
  };
  await Promise.all([
    ...['networks', 'subnets', 'ports', 'routers', 'floatingips'].map((c) => count(c, () => apis.network.list(`/${c}`, c, { project_id: projectId }))),
    count('security groups', async () =>
      (await apis.network.list<{ name?: unknown }>('/security-groups', 'security_groups', { project_id: projectId })).filter((g) => g.name !== 'default'),
    ),
    count('servers', () => apis.compute.list('/servers', 'servers', { all_tenants: 1, project_id: projectId })),
    count('volumes', () => apis.volume.list('/volumes', 'volumes', { all_tenants: 1, project_id: projectId })),
    count('images', () => apis.image.list('/images', 'images', { owner: projectId })),
    // Octavia keeps a load balancer of a deleted project running, with its VIP: the project stays while one is left.
    count('load balancers', async () =>
      (await cloud.hasService('load-balancer')) ? cloud.client('load-balancer').list('/lbaas/loadbalancers', 'loadbalancers', { project_id: projectId }) : [],
    ),
  ]);
  return found;
}

/** Deletes the project when nothing is left in it (its default security group first: Neutron would keep it); otherwise says what keeps it. */
export async function deleteIfEmpty(cloud: OpenStackCloud, project: Project): Promise<{ deleted: true } | { deleted: false; left: string[] }> {
  const left = await leftInProject(cloud, project.id);
  if (left.length > 0) return { deleted: false, left };
  const network = cloud.client('network');
  for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: project.id, name: 'default' }))
    await network.remove(`/security-groups/${g.id}`);
  await cloud.identity.remove(`/projects/${project.id}`);
  return { deleted: true };
}
