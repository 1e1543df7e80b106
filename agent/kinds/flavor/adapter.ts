import { KupenstackError } from '../../errors.ts';
import { OpenStackError } from '../../openstack/errors.ts';
import type { ServiceClient } from '../../openstack/service.ts';
import { parseDescriptionMarker, withDescriptionMarker } from '../../ownership/marker.ts';
import { bucket, openstackName, pick, type AdapterContext, type KindAdapter, type Ownership, type Remote } from '../kit/adapter.ts';
import { uuid5 } from '../../util/uuid5.ts';
import { pool } from '../../util/concurrency.ts';
import { flavorBoundCrossed } from '../../util/bounds.ts';

/**
 * Nova flavors are cloud-wide objects, made with the agent's admin scope:
 * - the name carries the project (`<project>-<name>`), since flavor names are unique in the cloud;
 * - the id is derived from the project and the manifest, so a create retried
 *   after a crash answers 409 and is adopted, and observe tells this project's
 *   flavors from another namespace's flavor with the same ref;
 * - the marker rides in the description (flavors have no tags or metadata);
 * - private flavors need access for the project: a follow-up update (`access`),
 *   read from the project's own flavor list (it shows the flavors the project may use).
 *
 * An adopted flavor (`import.adopt`, what `kupenstack export` writes) keeps
 * its id and its cloud-wide name as they are (the manifest's `spec.name`,
 * no project prefix); it is this project's when its marker names the
 * manifest and the project is the only one with access to it, so no other
 * namespace ever takes it for its own (and prunes it).
 */

type RawFlavor = Record<string, unknown>;

export function flavorId(projectId: string, address: string): string {
  return uuid5(`flavor:${projectId}/${address}`);
}

const isPublic = (raw: RawFlavor): boolean => raw['os-flavor-access:is_public'] !== false;
/** Flavor access GETs in flight at once: Nova answers each in ~10 ms, a hundred one by one held a second. */
const accessReads = 8;

function toRemote(raw: RawFlavor, projectId: string, accessible: boolean): Remote {
  const { marker, description } = parseDescriptionMarker(raw.description);
  return {
    id: String(raw.id),
    name: String(raw.name),
    ...(marker ? { marker } : {}),
    raw,
    fields: {
      name: raw.name,
      description,
      vcpus: raw.vcpus,
      ram: raw.ram,
      disk: raw.disk,
      // Before microversion 2.75 Nova wrote "no swap" as "".
      swap: raw.swap === '' ? 0 : raw.swap,
      'OS-FLV-EXT-DATA:ephemeral': raw['OS-FLV-EXT-DATA:ephemeral'],
      rxtx_factor: raw.rxtx_factor,
      'os-flavor-access:is_public': isPublic(raw),
      extra_specs: raw.extra_specs ?? {},
      access: !isPublic(raw) && accessible ? [projectId] : [],
    },
  };
}

/** Ids of the flavors the project may use: one list with the project's own token, not one access GET per flavor. */
async function visibleToProject(ctx: AdapterContext): Promise<Set<string>> {
  const items = await ctx.apis.compute.list<{ id: string }>('/flavors', 'flavors');
  return new Set(items.map((f) => f.id));
}

/** A private flavor's access list: Nova shows it to admins only. */
async function accessList(ctx: AdapterContext, id: string): Promise<string[]> {
  const compute = await ctx.cloud.adminCompute();
  const res = await compute.get<{ flavor_access: { tenant_id: string }[] }>(`/flavors/${encodeURIComponent(id)}/os-flavor-access`);
  return res.flavor_access.map((a) => a.tenant_id);
}

/**
 * Flavors name no project. One is the project's own when it is private and this project alone has access
 * (what observe and export take for the project's); a public one is the cloud's (usable, never adopted), a
 * private one other projects also reach is usable, and one the project has no access to is another's.
 */
export const flavorOwnership: Ownership = {
  rule: "a flavor (no project field): private (os-flavor-access:is_public false) with the namespace's project alone in its access list; a public one, or one shared with other projects, is usable, never adoptable",
  async standing(found, view) {
    if (isPublic(found.raw)) return { is: 'usable', whose: "is public: the cloud's, made by an admin for every project" };
    const access = await accessList(view.ctx, found.id);
    const others = access.filter((p) => p !== view.ctx.projectId);
    if (others.length === 0 && access.length === 1) return { is: 'own' };
    if (access.includes(view.ctx.projectId)) return { is: 'usable', whose: `is shared with other projects too (${others.join(', ')})` };
    return { is: 'foreign', whose: `is private to other projects (${others.join(', ') || 'none has access'})` };
  },
};

export const flavor: KindAdapter = {
  kind: 'Flavor',
  ownership: flavorOwnership,
  service: 'compute',
  fields: {
    name: 'replace',
    description: 'update',
    vcpus: 'replace',
    ram: 'replace',
    disk: 'replace',
    swap: 'replace',
    'OS-FLV-EXT-DATA:ephemeral': 'replace',
    rxtx_factor: 'replace',
    'os-flavor-access:is_public': 'replace',
    extra_specs: 'update',
    access: 'update',
  },

  async observe(ctx) {
    const compute = await ctx.cloud.adminCompute();
    const all = await compute.list<RawFlavor>('/flavors/detail', 'flavors', { is_public: 'None' });
    const marked = all.filter((raw) => parseDescriptionMarker(raw.description).marker?.owner === ctx.owner);
    const derived = (raw: RawFlavor): boolean => raw.id === flavorId(ctx.projectId, `${ctx.namespace}/${parseDescriptionMarker(raw.description).marker!.ref}`);
    // Adopted ones: one access list per private flavor of ours with an id we did not derive (few: those an export took over).
    const adopted = await soleAccess(
      compute,
      marked.filter((raw) => !derived(raw) && !isPublic(raw)),
    );
    const ours = marked.filter((raw) => derived(raw) || adopted.get(String(raw.id)) === ctx.projectId);
    const visible = ours.some((raw) => !isPublic(raw)) ? await visibleToProject(ctx) : new Set<string>();
    return ours.map((raw) => toRemote(raw, ctx.projectId, visible.has(String(raw.id))));
  },

  async observeCloud(ctx) {
    const compute = ctx.apis.compute;
    const out = new Map<string, Remote[]>();
    const ours: { raw: RawFlavor; projectId: string }[] = [];
    const undecided: RawFlavor[] = [];
    for (const raw of await compute.list<RawFlavor>('/flavors/detail', 'flavors', { is_public: 'None' })) {
      const { marker } = parseDescriptionMarker(raw.description);
      if (marker?.owner !== ctx.owner) continue;
      const projectId = [...ctx.projects].find(([id, p]) => raw.id === flavorId(id, `${p.namespace}/${marker.ref}`))?.[0];
      if (projectId) ours.push({ raw, projectId });
      else if (!isPublic(raw)) undecided.push(raw);
    }
    // Adopted flavors: the project that alone has access to it.
    const adopted = await soleAccess(compute, undecided);
    for (const raw of undecided) {
      const projectId = adopted.get(String(raw.id));
      if (projectId !== undefined && ctx.projects.has(projectId)) ours.push({ raw, projectId });
    }
    // Access of a private flavor: Nova has no list of it, so one GET per private flavor of ours (an object, not a project), a few at a time.
    await pool(ours, accessReads, async ({ raw, projectId }) => {
      const access = isPublic(raw)
        ? []
        : (await compute.get<{ flavor_access: { tenant_id: string }[] }>(`/flavors/${String(raw.id)}/os-flavor-access`)).flavor_access;
      bucket(
        out,
        projectId,
        toRemote(
          raw,
          projectId,
          access.some((a) => a.tenant_id === projectId),
        ),
      );
    });
    return out;
  },

  desired(m, ctx) {
    const spec = m.spec;
    // Made with the admin scope, so Nova's quota never sees it: the cluster admin's size bounds, before anything is planned.
    const over = flavorBoundCrossed(ctx.namespace, spec);
    if (over) throw over;
    const out: Record<string, unknown> = {
      // An adopted flavor keeps the cloud-wide name it has.
      name: (spec.import as { adopt?: unknown } | undefined)?.adopt === true ? openstackName(m) : `${ctx.projectName}-${openstackName(m)}`,
      ...pick(spec, {
        description: 'description',
        vcpus: 'vcpus',
        ram: 'ram',
        disk: 'disk',
        swap: 'swap',
        ephemeral: 'OS-FLV-EXT-DATA:ephemeral',
        rxtxFactor: 'rxtx_factor',
        extraSpecs: 'extra_specs',
      }),
      // Nova's own default is public; ours is private to the project, so it is always sent and compared.
      'os-flavor-access:is_public': spec.isPublic === true,
    };
    if (spec.isPublic !== true) out.access = [ctx.projectId];
    return out;
  },

  async create(ctx, m, desired, marker) {
    const compute = await ctx.cloud.adminCompute();
    const id = flavorId(ctx.projectId, m.address);
    const { description, extra_specs: _specs, access: _access, ...rest } = desired;
    const body = { flavor: { ...rest, id, description: withDescriptionMarker(description as string | undefined, marker) } };
    try {
      const res = await compute.post<{ flavor: RawFlavor }>('/flavors', body);
      return toRemote(res.flavor, ctx.projectId, false);
    } catch (err) {
      if (!(err instanceof OpenStackError && err.conflict)) throw err;
      // Our id already exists: an earlier create of this manifest, adopted by the engine through observe.
      if (await compute.find(`/flavors/${id}`)) throw err;
      throw new KupenstackError(
        'flavor.name-taken',
        `Nova already has a flavor named "${String(desired.name)}" that this manifest did not create; flavor names are unique in the whole cloud: set spec.name to another name`,
        { cause: err },
      );
    }
  },

  async update(ctx, remote, changes) {
    const compute = await ctx.cloud.adminCompute();
    if ('description' in changes) {
      const text = changes.description as string | undefined;
      await compute.put(`/flavors/${remote.id}`, { flavor: { description: remote.marker ? withDescriptionMarker(text, remote.marker) : (text ?? null) } });
    }
    if ('extra_specs' in changes) await updateExtraSpecs(compute, remote, (changes.extra_specs ?? {}) as Record<string, string>);
    if ('access' in changes) {
      const want = new Set((changes.access ?? []) as string[]);
      const have = new Set((remote.fields.access ?? []) as string[]);
      for (const project of want) if (!have.has(project)) await flavorAction(compute, remote.id, { addTenantAccess: { tenant: project } });
      for (const project of have) if (!want.has(project)) await flavorAction(compute, remote.id, { removeTenantAccess: { tenant: project } });
    }
  },

  async delete(ctx, remote) {
    const compute = await ctx.cloud.adminCompute();
    await compute.remove(`/flavors/${remote.id}`);
  },

  async remark(ctx, remote, marker) {
    const compute = await ctx.cloud.adminCompute();
    const text = typeof remote.fields.description === 'string' && remote.fields.description !== '' ? remote.fields.description : undefined;
    await compute.put(`/flavors/${remote.id}`, { flavor: { description: withDescriptionMarker(text, marker) } });
  },

  async get(ctx, id) {
    // With the namespace's scope: Nova shows a member the public flavors and the private ones its project has access to, nothing else.
    const res = await ctx.apis.compute.find<{ flavor: RawFlavor }>(`/flavors/${encodeURIComponent(id)}`);
    if (!res) return undefined;
    const accessible = !isPublic(res.flavor) && (await accessList(ctx, id)).includes(ctx.projectId);
    return toRemote(res.flavor, ctx.projectId, accessible);
  },

  async find(ctx, filter) {
    // Flavors the project may use; flavors have no tags.
    if (filter.tags?.length) return [];
    const items = await ctx.apis.compute.list<RawFlavor>('/flavors/detail', 'flavors');
    return items
      .map((raw) => toRemote(raw, ctx.projectId, true))
      .filter(
        (r) => (filter.name === undefined || r.name === filter.name) && (filter.description === undefined || r.fields.description === filter.description),
      );
  },
};

/** Private flavors whose access list is exactly one project: flavor id → that project. */
async function soleAccess(compute: ServiceClient, flavors: readonly RawFlavor[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  await pool([...flavors], accessReads, async (raw) => {
    const access = (await compute.get<{ flavor_access: { tenant_id: string }[] }>(`/flavors/${String(raw.id)}/os-flavor-access`)).flavor_access;
    if (access.length === 1) out.set(String(raw.id), access[0]!.tenant_id);
  });
  return out;
}

/** Sets the changed keys in one call, removes the dropped ones (Nova has no "replace all"). */
async function updateExtraSpecs(compute: ServiceClient, remote: Remote, want: Record<string, string>): Promise<void> {
  const have = (remote.fields.extra_specs ?? {}) as Record<string, string>;
  const set = Object.fromEntries(Object.entries(want).filter(([k, v]) => have[k] !== v));
  if (Object.keys(set).length > 0) await compute.post(`/flavors/${remote.id}/os-extra_specs`, { extra_specs: set });
  for (const key of Object.keys(have)) if (!(key in want)) await compute.remove(`/flavors/${remote.id}/os-extra_specs/${encodeURIComponent(key)}`);
}

/** Access that is already there (or already gone) is the state we want. */
async function flavorAction(compute: ServiceClient, id: string, action: Record<string, unknown>): Promise<void> {
  try {
    await compute.post(`/flavors/${id}/action`, action);
  } catch (err) {
    const settled =
      'addTenantAccess' in action
        ? err instanceof OpenStackError && err.conflict && /already exists/i.test(err.detail)
        : err instanceof OpenStackError && err.notFound;
    if (settled) return;
    throw err;
  }
}
