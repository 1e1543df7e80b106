import { KupenstackError } from '../errors.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { OpenStackError } from '../openstack/errors.ts';
import { ownerTag } from '../ownership/marker.ts';

/**
 * The agent's own images project: where a shared image (one per digest for
 * the whole cloud) lives. Found by the owner's tag plus its own tag, made
 * like the namespaces' projects (tags in the create call, a conflict adopts
 * ours and refuses a stranger's). It has no namespace tag, so it is never
 * taken for a namespace nor pruned with one; its name holds `_`, which no
 * namespace can, so it never clashes with `projectPrefix + namespace`.
 */

const sharedImagesTag = 'kupenstack-shared-images';

interface KeystoneProject {
  id: string;
  name: string;
  domain_id: string;
  tags?: string[];
}

const known = new WeakMap<OpenStackCloud, Map<string, Promise<string>>>();

/** Keystone allows 64 characters in a project name. */
function sharedImagesProjectName(owner: string): string {
  return `kupenstack_images_${owner}`.slice(0, 64);
}

/** The project id, found or created once per cloud and owner in this process. */
export function sharedImagesProject(cloud: OpenStackCloud, owner: string, found?: string): Promise<string> {
  let byOwner = known.get(cloud.base);
  if (!byOwner) known.set(cloud.base, (byOwner = new Map<string, Promise<string>>()));
  let p = byOwner.get(owner);
  if (!p) {
    p = found !== undefined ? Promise.resolve(found) : findOrCreate(cloud, owner);
    byOwner.set(owner, p);
    p.catch(() => byOwner.delete(owner));
  }
  return p;
}

/**
 * "There is none" is believed this long: every project's observe asks, and
 * most clouds never share an image. A partial pass (`trustKnown`) believes
 * what the last full pass saw however old: a Keystone list on the way to a
 * registry notification's first write took 0.1 s, and 4 s on a busy test bed.
 */
const absentForMs = 30_000;
const absent = new WeakMap<OpenStackCloud, Map<string, number>>();

/** Looks only (observe and plan create nothing): undefined while no shared image was ever made. */
export async function findSharedImagesProject(cloud: OpenStackCloud, owner: string, trustKnown = false): Promise<string | undefined> {
  const made = known.get(cloud.base)?.get(owner);
  if (made) return made;
  const since = absent.get(cloud.base)?.get(owner);
  if (since !== undefined && (trustKnown || Date.now() - since < absentForMs)) return undefined;
  const found = await lookup(cloud, owner);
  if (found) void sharedImagesProject(cloud, owner, found);
  else {
    let byOwner = absent.get(cloud.base);
    if (!byOwner) absent.set(cloud.base, (byOwner = new Map<string, number>()));
    byOwner.set(owner, Date.now());
  }
  return found;
}

async function lookup(cloud: OpenStackCloud, owner: string): Promise<string | undefined> {
  const [found] = await cloud.identity.list<KeystoneProject>('/projects', 'projects', { tags: [ownerTag(owner), sharedImagesTag].join(',') });
  return found?.id;
}

async function findOrCreate(cloud: OpenStackCloud, owner: string): Promise<string> {
  const identity = cloud.identity;
  const tags = [ownerTag(owner), sharedImagesTag];
  const found = await lookup(cloud, owner);
  if (found) return found;
  const me = await cloud.whoami();
  if (!me.projectId)
    throw new KupenstackError(
      'image.shared-project',
      "the agent's token has no project, so KupenStack cannot tell the domain of its images project; scope the agent's cloud entry to a project",
    );
  const mine = await identity.get<{ project: KeystoneProject }>(`/projects/${me.projectId}`);
  const name = sharedImagesProjectName(owner);
  const body = {
    project: { name, domain_id: mine.project.domain_id, description: `Images shared between the projects of KupenStack (${owner})`, enabled: true, tags },
  };
  try {
    return (await identity.post<{ project: KeystoneProject }>('/projects', body, [201])).project.id;
  } catch (err) {
    if (!(err instanceof OpenStackError) || !err.conflict) throw err;
    const [existing] = await identity.list<KeystoneProject>('/projects', 'projects', { name, domain_id: mine.project.domain_id });
    if (existing && tags.every((t) => existing.tags?.includes(t))) return existing.id;
    throw new KupenstackError(
      'image.shared-project',
      `Keystone project "${name}" already exists and is not KupenStack owner "${owner}"'s images project; ` +
        `KupenStack never takes over objects it did not create. Rename that project, or use sharing: private`,
      { cause: err },
    );
  }
}
