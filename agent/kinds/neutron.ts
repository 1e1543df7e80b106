import { parseDescriptionMarker, withDescriptionMarker, type Marker } from '../ownership/marker.ts';
import type { AdapterContext, Remote } from './adapter.ts';

/**
 * Shared by the Neutron kinds. Zed's Neutron takes no tags in a create call,
 * so the marker rides in the description (written atomically with the
 * object); the user's own tags stay the user's.
 */
export async function observeNeutron(ctx: AdapterContext, collection: string, toRemote: (raw: Record<string, unknown>, description: string) => Remote): Promise<Remote[]> {
  const items = await ctx.apis.network.list<Record<string, unknown>>(`/${collection}`, collection, { project_id: ctx.projectId });
  const out: Remote[] = [];
  for (const raw of items) {
    const { marker, description } = parseDescriptionMarker(raw.description);
    if (!marker || marker.owner !== ctx.owner) continue;
    out.push({ ...toRemote(raw, description), marker });
  }
  return out;
}

export function neutronDescription(desired: Record<string, unknown>, marker: Marker): string {
  return withDescriptionMarker(typeof desired.description === 'string' ? desired.description : undefined, marker);
}

/** The description field the user sees, with our marker kept on the end. */
export function describedUpdate(remote: Remote, changes: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = { ...changes };
  if ('description' in changes && remote.marker) body.description = withDescriptionMarker(changes.description as string | undefined, remote.marker);
  return body;
}

/** Neutron keeps tags behind their own endpoint: one PUT replaces the set. */
export async function putTags(ctx: AdapterContext, collection: string, id: string, tags: unknown): Promise<void> {
  await ctx.apis.network.put(`/${collection}/${id}/tags`, { tags: Array.isArray(tags) ? tags : [] });
}

export function sortedTags(raw: Record<string, unknown>): string[] {
  return Array.isArray(raw.tags) ? [...(raw.tags as string[])].sort() : [];
}
