import { KupenstackError } from '../../errors.ts';
import { parseDescriptionMarker, withDescriptionMarker } from '../../ownership/marker.ts';
import { bucket, openstackName, type KindAdapter, type Remote } from '../kit/adapter.ts';
import { byProjectField } from '../kit/ownership.ts';

/**
 * Nova server groups. Nova has no update call for them and they carry no
 * tags, metadata or description, so:
 * - the marker rides at the end of the NAME (`web [kupenstack <owner> ServerGroup/web 1a2b3c4d]`),
 *   written by the create call, which is what makes adoption and prune safe;
 * - every field is `replace`. A replaced group cascades to the VMs that name it:
 *   a server joins a group only when it is created (VirtualMachine's `server_group`).
 * Nova's list gives no next link, so the cloud-wide list (one for every project
 * observed, `all_projects`) pages by `limit`/`offset` until a short page.
 */

type RawServerGroup = {
  id: string;
  name: string;
  policy?: string;
  policies?: string[];
  rules?: Record<string, unknown>;
  members?: string[];
  project_id?: string;
} & Record<string, unknown>;

/** Nova's default `osapi_max_limit`: a page this long may have a next one. */
const pageSize = 1000;

/** policy as a string and rules: microversion 2.64 (Zed speaks up to 2.93; the agent negotiates 2.90). */
const minimumMinor = 64;

function toRemote(raw: RawServerGroup): Remote {
  const { marker, description: name } = parseDescriptionMarker(raw.name);
  const rules = raw.rules ?? {};
  return {
    id: raw.id,
    name,
    ...(marker ? { marker } : {}),
    raw,
    fields: {
      name,
      policy: raw.policy ?? raw.policies?.[0],
      // Nova answers {} for a policy without rules; the manifest's absence is the same.
      ...(Object.keys(rules).length > 0 ? { rules: { max_server_per_host: Number(rules.max_server_per_host) } } : {}),
    },
  };
}

function checkVersion(headers: Record<string, string>): void {
  const minor = Number(/2\.(\d+)/.exec(headers['x-openstack-nova-api-version'] ?? '')?.[1] ?? 0);
  if (minor < minimumMinor)
    throw new KupenstackError(
      'servergroup.microversion',
      `this Nova speaks compute 2.${minor}; server groups with a policy string and rules need 2.${minimumMinor} (OpenStack Stein or later)`,
    );
}

export const serverGroup: KindAdapter = {
  kind: 'ServerGroup',
  ownership: byProjectField(['project_id'], "a server group: its project_id is the namespace's project"),
  service: 'compute',
  fields: { name: 'replace', policy: 'replace', rules: 'replace' },
  impact: {
    fields: {
      policy: {
        code: 'dependents-deleted',
        note: 'Nova cannot change a server group: it is deleted and made again, and the VMs in it are recreated to join the new one',
      },
      rules: {
        code: 'dependents-deleted',
        note: 'Nova cannot change a server group: it is deleted and made again, and the VMs in it are recreated to join the new one',
      },
    },
  },

  report: (remote) => {
    const members = Array.isArray(remote.raw.members) ? (remote.raw.members as string[]) : [];
    return { ...(typeof remote.fields.policy === 'string' ? { policy: remote.fields.policy } : {}), members, memberCount: members.length };
  },

  async observe(ctx) {
    const items = await ctx.apis.compute.list<RawServerGroup>('/os-server-groups', 'server_groups');
    // Without all_projects Nova lists the token's project only; the project_id check guards an admin token.
    return items
      .filter((g) => g.project_id === undefined || g.project_id === ctx.projectId)
      .map(toRemote)
      .filter((r) => r.marker?.owner === ctx.owner);
  },

  async observeCloud(ctx) {
    // One list for every project: the reads of a run do not grow with the number of namespaces.
    const out = new Map<string, Remote[]>();
    for (let offset = 0; ; offset += pageSize) {
      const page = await ctx.apis.compute.list<RawServerGroup>('/os-server-groups', 'server_groups', { all_projects: 'True', limit: pageSize, offset });
      for (const g of page) {
        const remote = toRemote(g);
        if (remote.marker?.owner === ctx.owner && g.project_id && ctx.projects.has(g.project_id)) bucket(out, g.project_id, remote);
      }
      if (page.length < pageSize) return out;
    }
  },

  desired(m) {
    const out: Record<string, unknown> = { name: openstackName(m) };
    if (typeof m.spec.policy === 'string') out.policy = m.spec.policy;
    const rules = m.spec.rules as { maxServerPerHost?: number } | undefined;
    if (rules?.maxServerPerHost !== undefined) out.rules = { max_server_per_host: rules.maxServerPerHost };
    return out;
  },

  async create(ctx, _m, desired, marker) {
    checkVersion(await ctx.cloud.computeHeaders());
    const body = {
      server_group: { name: withDescriptionMarker(String(desired.name), marker), policy: desired.policy, ...(desired.rules ? { rules: desired.rules } : {}) },
    };
    const res = await ctx.apis.compute.post<{ server_group: RawServerGroup }>('/os-server-groups', body);
    return toRemote(res.server_group);
  },

  // Every field is `replace`: Nova has no update call for server groups.
  async update() {},

  async delete(ctx, remote) {
    // Nova lets a group with members go; the servers stay where they run.
    await ctx.apis.compute.remove(`/os-server-groups/${remote.id}`);
  },

  async get(ctx, id) {
    const res = await ctx.apis.compute.find<{ server_group: RawServerGroup }>(`/os-server-groups/${encodeURIComponent(id)}`);
    return res ? toRemote(res.server_group) : undefined;
  },

  async find(ctx, filter) {
    if (filter.tags?.length || filter.description !== undefined)
      throw new KupenstackError('import.unsupported', 'Nova server groups have no tags or description: import a server group by id or name');
    const items = await ctx.apis.compute.list<RawServerGroup>('/os-server-groups', 'server_groups');
    return items.map(toRemote).filter((r) => r.name === filter.name);
  },
};
