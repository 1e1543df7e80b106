import { ownerTag, specHash } from '../../ownership/marker.ts';
import type { ServiceClient, ServiceType } from '../../openstack/service.ts';
import type { AdapterContext, KindAdapter, Remote } from '../kit/adapter.ts';
import { neverForeign } from '../kit/ownership.ts';

/**
 * The quotas of the namespace's project: one object per project (id = the
 * project id), written with the agent's admin scope to Nova, Neutron and
 * Cinder. Quotas always exist, so "ours" is a Keystone project tag
 * `kupenstack-quota:<owner>:<manifest name>` that create() sets first.
 *
 * create() is several calls (tag, then one PUT per service), against the
 * contract's one-call rule; that is safe here because every call is an
 * idempotent write of absolute values on an object that already exists (the
 * tag only when missing: Keystone refuses a PUT of a tag it holds): a crash
 * half-way leaves a tagged project that observe reports, and the next run's
 * update writes the values still missing. delete() resets the quotas to the
 * cloud's defaults and removes the tag last, so a crash in between is
 * finished by the next run.
 *
 * Adoption (`import: {id: <project id>, adopt: true}`, what `kupenstack
 * export` writes) takes the quotas over as they are: the tag is the only write.
 */

export type Section = 'compute' | 'network' | 'blockStorage';

/** spec name → API name, per service. */
export const quotaSections: Record<Section, Record<string, string>> = {
  compute: {
    instances: 'instances',
    cores: 'cores',
    ramMiB: 'ram',
    keyPairs: 'key_pairs',
    serverGroups: 'server_groups',
    serverGroupMembers: 'server_group_members',
    metadataItems: 'metadata_items',
  },
  network: {
    networks: 'network',
    subnets: 'subnet',
    ports: 'port',
    routers: 'router',
    floatingIPs: 'floatingip',
    securityGroups: 'security_group',
    securityGroupRules: 'security_group_rule',
    rbacPolicies: 'rbac_policy',
    subnetPools: 'subnetpool',
  },
  blockStorage: {
    volumes: 'volumes',
    gigabytes: 'gigabytes',
    snapshots: 'snapshots',
    backups: 'backups',
    backupGigabytes: 'backup_gigabytes',
    perVolumeGigabytes: 'per_volume_gigabytes',
  },
};
const sectionNames = Object.keys(quotaSections) as Section[];
/** The catalog type of each section's service. */
const serviceOf = { compute: 'compute', network: 'network', blockStorage: 'volumev3' } as const satisfies Record<Section, ServiceType>;

const quotaTagPrefix = (owner: string): string => `kupenstack-quota:${owner}:`;
const refPrefix = 'ProjectQuota/';

interface QuotaApi {
  client: ServiceClient;
  path: string;
  /** Envelope key of the answer and of a PUT body. */
  key: string;
}

/**
 * The admin-scoped endpoints. Cinder's URL already holds the ADMIN project
 * id (`/v3/<admin>`); the target project goes in the path, which Cinder
 * honours for an admin.
 */
async function quotaApi(ctx: Pick<AdapterContext, 'cloud' | 'projectId'>, section: Section): Promise<QuotaApi> {
  const project = encodeURIComponent(ctx.projectId);
  if (section === 'compute') return { client: await ctx.cloud.adminCompute(), path: `/os-quota-sets/${project}`, key: 'quota_set' };
  if (section === 'network') return { client: ctx.cloud.client('network'), path: `/quotas/${project}`, key: 'quota' };
  return { client: ctx.cloud.client('volumev3'), path: `/os-quota-sets/${project}`, key: 'quota_set' };
}

/** `compute.ram`, `network.floatingip`, `blockStorage.gigabytes`: flat fields named by the API. */
function flatten(section: Section, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const api of Object.values(quotaSections[section])) if (values[api] !== undefined) out[`${section}.${api}`] = values[api];
  return out;
}

function toRemote(
  ctx: Pick<AdapterContext, 'projectId' | 'owner'>,
  name: string,
  projectName: string,
  raw: Partial<Record<Section, Record<string, unknown>>>,
): Remote {
  let fields: Record<string, unknown> = {};
  for (const s of sectionNames) if (raw[s]) fields = { ...fields, ...flatten(s, raw[s]) };
  // Nothing is `replace`: the hash of no fields, as the engine computes it.
  return { id: ctx.projectId, name: projectName, marker: { owner: ctx.owner, ref: `${refPrefix}${name}`, specHash: specHash({}) }, fields, raw };
}

async function quotasOf(ctx: Pick<AdapterContext, 'cloud' | 'projectId' | 'owner'>, project: { name: string; tags: string[] }): Promise<Remote[]> {
  const names = project.tags.filter((t) => t.startsWith(quotaTagPrefix(ctx.owner))).map((t) => t.slice(quotaTagPrefix(ctx.owner).length));
  if (names.length === 0) return [];
  const raw = await readQuotas(ctx);
  return names.map((name) => toRemote(ctx, name, project.name, raw));
}

/** The project's quotas, one GET per service. */
async function readQuotas(ctx: Pick<AdapterContext, 'cloud' | 'projectId'>): Promise<Partial<Record<Section, Record<string, unknown>>>> {
  const raw: Partial<Record<Section, Record<string, unknown>>> = {};
  await Promise.all(
    sectionNames.map(async (s) => {
      // A cloud without the service (no Cinder) holds no such quota: nothing to observe. Declaring one there fails at its write, naming the missing endpoint.
      if (!(await ctx.cloud.hasService(serviceOf[s]))) return;
      const api = await quotaApi(ctx, s);
      raw[s] = (await api.client.get<Record<string, Record<string, unknown>>>(api.path))[api.key] ?? {};
    }),
  );
  return raw;
}

async function projectTags(ctx: AdapterContext): Promise<{ name: string; tags: string[] } | undefined> {
  const res = await ctx.cloud.identity.find<{ project: { name: string; tags?: string[] } }>(`/projects/${encodeURIComponent(ctx.projectId)}`);
  return res ? { name: res.project.name, tags: res.project.tags ?? [] } : undefined;
}

/** One PUT per service that has changes; answers what each service now holds. */
async function writeQuotas(ctx: AdapterContext, values: Record<string, unknown>): Promise<Partial<Record<Section, Record<string, unknown>>>> {
  const out: Partial<Record<Section, Record<string, unknown>>> = {};
  for (const section of sectionNames) {
    const body: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(values)) if (key.startsWith(`${section}.`)) body[key.slice(section.length + 1)] = value;
    if (Object.keys(body).length === 0) continue;
    const api = await quotaApi(ctx, section);
    const res = await api.client.put<Record<string, Record<string, unknown>>>(api.path, { [api.key]: body });
    out[section] = res[api.key] ?? {};
  }
  return out;
}

const tagPath = (ctx: AdapterContext, tag: string): string => `/projects/${encodeURIComponent(ctx.projectId)}/tags/${encodeURIComponent(tag)}`;

export const projectQuota: KindAdapter = {
  kind: 'ProjectQuota',
  // The quotas are the project's own: get answers no other project's.
  ownership: neverForeign("a project's quotas: the namespace's own Keystone project, no other", (found, view) => found.id === view.ctx.projectId),
  fields: Object.fromEntries(sectionNames.flatMap((s) => Object.values(quotaSections[s]).map((api) => [`${s}.${api}`, 'update' as const]))),

  async observe(ctx) {
    const project = await projectTags(ctx);
    return project ? quotasOf(ctx, project) : [];
  },

  async observeCloud(ctx) {
    // The tags of every owned project in one Keystone list; quotas are read only where a ProjectQuota is.
    const out = new Map<string, Remote[]>();
    for (const p of await ctx.cloud.identity.list<{ id: string; name: string; tags?: string[] }>('/projects', 'projects', { tags: ownerTag(ctx.owner) })) {
      if (!ctx.projects.has(p.id)) continue;
      const found = await quotasOf({ cloud: ctx.cloud, projectId: p.id, owner: ctx.owner }, { name: p.name, tags: p.tags ?? [] });
      if (found.length > 0) out.set(p.id, found);
    }
    return out;
  },

  desired(m) {
    const out: Record<string, unknown> = {};
    for (const section of sectionNames) {
      const spec = (m.spec[section] ?? {}) as Record<string, unknown>;
      for (const [from, api] of Object.entries(quotaSections[section])) if (spec[from] !== undefined) out[`${section}.${api}`] = spec[from];
    }
    return out;
  },

  async create(ctx, m, desired) {
    const prefix = quotaTagPrefix(ctx.owner);
    const project = await projectTags(ctx);
    // Keystone answers 400 to a PUT of a tag the project already has (it would list it twice).
    if (!project?.tags.includes(`${prefix}${m.metadata.name}`))
      await ctx.cloud.identity.put(tagPath(ctx, `${prefix}${m.metadata.name}`), undefined, [201, 204]);
    // A renamed manifest takes the project's quotas over: the old name's tag goes, so its prune leaves the quotas alone.
    for (const stale of (project?.tags ?? []).filter((t) => t.startsWith(prefix) && t !== `${prefix}${m.metadata.name}`))
      await ctx.cloud.identity.remove(tagPath(ctx, stale));
    const written = await writeQuotas(ctx, desired);
    return toRemote(ctx, m.metadata.name, project?.name ?? '', written);
  },

  async get(ctx, id) {
    // A namespace's quotas are its own project's: another id is not something it can import.
    if (id !== ctx.projectId) return undefined;
    const project = await projectTags(ctx);
    if (!project) return undefined;
    const [found] = await quotasOf(ctx, project);
    if (found) return found;
    // Nobody's yet: the values, without a marker.
    const { marker: _none, ...unmarked } = toRemote(ctx, '', project.name, await readQuotas(ctx));
    return unmarked;
  },

  async remark(ctx, _remote, _marker, m) {
    const project = await projectTags(ctx);
    const tag = `${quotaTagPrefix(ctx.owner)}${m.metadata.name}`;
    // Keystone refuses a PUT of a tag the project already has.
    if (!project?.tags.includes(tag)) await ctx.cloud.identity.put(tagPath(ctx, tag), undefined, [201, 204]);
  },

  async update(ctx, _remote, changes) {
    await writeQuotas(ctx, changes);
  },

  async delete(ctx, remote) {
    const tag = `${quotaTagPrefix(ctx.owner)}${(remote.marker?.ref ?? '').slice(refPrefix.length)}`;
    const project = await projectTags(ctx);
    // Gone, already reset, or taken over by another manifest of this owner: nothing of ours to reset.
    if (!project?.tags.includes(tag)) return;
    for (const section of sectionNames) {
      const api = await quotaApi(ctx, section);
      await api.client.remove(api.path);
    }
    await ctx.cloud.identity.remove(tagPath(ctx, tag));
  },
};
