import { KupenstackError } from '../../errors.ts';
import { markerFromMetadata, metaOwner } from '../../ownership/marker.ts';
import { bucket, type AdapterContext, type CloudContext, type ImportFilter, type Remote } from './adapter.ts';
import { cloudPageSize } from './neutron.ts';

/** What Cinder's volumes and snapshots share: a resource path and the key its object answers under. */
export interface CinderResource {
  /** `volumes` or `snapshots`. */
  collection: string;
  /** `volume` or `snapshot`. */
  key: string;
  /** The attribute an admin list names each object's project by. */
  projectAttr: string;
}

type Raw = Record<string, unknown>;

/** What a volume and a snapshot report alike: id, name, status, marker, and the fields both declare (name, description, the user's metadata), plus the kind's own `fields`. */
export function cinderRemote(raw: Raw, fields: Record<string, unknown>): Remote {
  const marker = markerFromMetadata(raw.metadata as Record<string, unknown> | undefined);
  // The marker's own keys are not the user's metadata.
  const metadata = Object.fromEntries(Object.entries((raw.metadata ?? {}) as Record<string, string>).filter(([k]) => !k.startsWith('kupenstack_')));
  return {
    id: String(raw.id),
    name: typeof raw.name === 'string' ? raw.name : '',
    status: String(raw.status),
    ...(marker ? { marker } : {}),
    raw,
    // Cinder answers null for an unset name or description.
    fields: { name: raw.name ?? '', description: raw.description ?? '', ...fields, metadata },
  };
}

/** This project's objects of the owner: one list filtered by the marker's metadata. */
export async function observeCinder(ctx: AdapterContext, r: CinderResource, toRemote: (raw: Raw) => Remote): Promise<Remote[]> {
  const items = await ctx.apis.volume.list<Raw>(`/${r.collection}/detail`, r.collection, { metadata: JSON.stringify({ [metaOwner]: ctx.owner }) });
  return items.map(toRemote).filter((x) => x.marker?.owner === ctx.owner);
}

/** Every observed project's objects of the owner in one paginated admin list (`all_tenants`), kept per project. */
export async function observeCinderCloud(ctx: CloudContext, r: CinderResource, toRemote: (raw: Raw) => Remote): Promise<Map<string, Remote[]>> {
  const out = new Map<string, Remote[]>();
  const query = { all_tenants: 1, metadata: JSON.stringify({ [metaOwner]: ctx.owner }), limit: cloudPageSize };
  for await (const page of ctx.apis.volume.pages<Raw>(`/${r.collection}/detail`, r.collection, query)) {
    for (const raw of page) {
      const projectId = raw[r.projectAttr];
      if (typeof projectId !== 'string' || !ctx.projects.has(projectId)) continue;
      const remote = toRemote(raw);
      if (remote.marker?.owner === ctx.owner) bucket(out, projectId, remote);
    }
  }
  return out;
}

/**
 * DELETE of a volume or snapshot. Cinder refuses a second DELETE while the first
 * one runs (400): that is "already going", as is an object already gone.
 */
export async function deleteCinder(ctx: AdapterContext, r: CinderResource, id: string): Promise<void> {
  const path = `/${r.collection}/${id}`;
  const res = await ctx.apis.volume.call('DELETE', path, { ok: [202, 204, 400, 404], signal: ctx.signal });
  if (res.status !== 400) return;
  const now = await ctx.apis.volume.find<Record<string, { status?: unknown }>>(path);
  if (!now || now[r.key]?.status === 'deleting') return;
  await ctx.apis.volume.remove(path);
}

/** An import filter over Cinder's list: by name (Cinder filters), then description (it does not); no tags in Cinder. */
export async function findCinder(
  ctx: AdapterContext,
  r: CinderResource,
  filter: ImportFilter,
  toRemote: (raw: Record<string, unknown>) => Remote,
): Promise<Remote[]> {
  if (filter.tags?.length) throw new KupenstackError('import.unsupported', `Cinder ${r.collection} have no tags: import a ${r.key} by id, name or description`);
  const items = await ctx.apis.volume.list<Record<string, unknown>>(`/${r.collection}/detail`, r.collection, { name: filter.name });
  return items.map(toRemote).filter((x) => filter.description === undefined || x.fields.description === filter.description);
}
