import { KupenstackError } from '../errors.ts';
import type { AdapterContext, ImportFilter, Remote } from './adapter.ts';

/** What Cinder's volumes and snapshots share: a resource path and the key its object answers under. */
export interface CinderResource {
  /** `volumes` or `snapshots`. */
  collection: string;
  /** `volume` or `snapshot`. */
  key: string;
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
export async function findCinder(ctx: AdapterContext, r: CinderResource, filter: ImportFilter, toRemote: (raw: Record<string, unknown>) => Remote): Promise<Remote[]> {
  if (filter.tags?.length) throw new KupenstackError('import.unsupported', `Cinder ${r.collection} have no tags: import a ${r.key} by id, name or description`);
  const items = await ctx.apis.volume.list<Record<string, unknown>>(`/${r.collection}/detail`, r.collection, { name: filter.name });
  return items.map(toRemote).filter((x) => filter.description === undefined || x.fields.description === filter.description);
}
