import ipaddr from 'ipaddr.js';
import { KupenstackError } from '../../errors.ts';
import { parseDescriptionMarker, stableJson, withDescriptionMarker, type Marker } from '../../ownership/marker.ts';
import { bucket, lookedUpId, openstackName, type AdapterContext, type CloudContext, type ImportFilter, type ObserveWanted, type Remote } from './adapter.ts';

/**
 * Shared by the Neutron kinds. Zed's Neutron takes no tags in a create call,
 * so the marker rides in the description (written atomically with the
 * object); the user's own tags stay the user's.
 */
export async function observeNeutron(
  ctx: AdapterContext,
  collection: string,
  toRemote: (raw: Record<string, unknown>, description: string) => Remote,
): Promise<Remote[]> {
  // The answer's key is the path with underscores (security-groups → security_groups).
  const items = await ctx.apis.network.list<Record<string, unknown>>(`/${collection}`, collection.replace(/-/g, '_'), { project_id: ctx.projectId });
  const out: Remote[] = [];
  for (const raw of items) {
    const { marker, description } = parseDescriptionMarker(raw.description);
    if (!marker || marker.owner !== ctx.owner) continue;
    out.push({ ...toRemote(raw, description), marker });
  }
  return out;
}

/** Characters of filter values per list: the query stays well under the 8 KiB a WSGI server accepts. */
const filterChars = 3000;

/** The project's objects whose `field` is one of `values` (Neutron ORs a repeated filter), in as few lists as the URL allows. */
async function neutronListWhere(ctx: AdapterContext, collection: string, field: string, values: readonly string[]): Promise<Record<string, unknown>[]> {
  const groups: string[][] = [];
  let size = 0;
  for (const v of values) {
    const cost = field.length + encodeURIComponent(v).length + 2;
    if (groups.length === 0 || size + cost > filterChars) {
      groups.push([]);
      size = 0;
    }
    groups.at(-1)!.push(v);
    size += cost;
  }
  const key = collection.replace(/-/g, '_');
  const lists = await Promise.all(
    groups.map((group) => {
      const query = new URLSearchParams([['project_id', ctx.projectId], ...group.map((v): [string, string] => [field, v])]);
      return ctx.apis.network.list<Record<string, unknown>>(`/${collection}?${query.toString()}`, key);
    }),
  );
  return lists.flat();
}

/**
 * KindAdapter.observeSome for a Neutron kind: the project's objects named like the manifests (one
 * filtered list, a few objects instead of the whole collection), then by id those a run recorded that
 * the names did not find (renamed since); only ours are kept.
 */
export async function observeNeutronSome(
  ctx: AdapterContext,
  collection: string,
  wanted: ObserveWanted,
  toRemote: (raw: Record<string, unknown>, description: string) => Remote,
): Promise<Remote[]> {
  const named = await neutronListWhere(ctx, collection, 'name', [...new Set(wanted.manifests.map(openstackName))]);
  const found = new Set(named.map((raw) => String(raw.id)));
  const ids = [...new Set(wanted.ids)].filter((id) => !found.has(id));
  const byId = ids.length > 0 ? await neutronListWhere(ctx, collection, 'id', ids) : [];
  const out: Remote[] = [];
  for (const raw of [...named, ...byId]) {
    const { marker, description } = parseDescriptionMarker(raw.description);
    if (marker?.owner === ctx.owner) out.push({ ...toRemote(raw, description), marker });
  }
  return out;
}

/** Items per page of a cloud-wide list: few calls, and memory bounded by one page plus what is kept. */
export const cloudPageSize = 500;

/**
 * Ids per filtered list: Neutron ORs a repeated filter (`project_id=a&project_id=b`),
 * so it serialises only the objects asked for (a security group list of a busy
 * cloud costs seconds of Neutron CPU per hundred foreign groups), while the
 * query string stays well under the 8 KiB a WSGI server accepts.
 */
const idsPerList = 120;

/**
 * One Neutron collection filtered by `field` ∈ `ids`: one paged list per `idsPerList`
 * ids (one list up to that many projects or servers, so the calls do not grow with
 * them), the lists sent side by side. Every object comes to `each` exactly once.
 */
export async function neutronListByIds<T = Record<string, unknown>>(
  network: AdapterContext['apis']['network'],
  collection: string,
  field: string,
  ids: readonly string[],
  each: (raw: T) => void,
): Promise<void> {
  const sorted = [...ids].sort();
  const groups: string[][] = [];
  for (let i = 0; i < sorted.length; i += idsPerList) groups.push(sorted.slice(i, i + idsPerList));
  const key = collection.replace(/-/g, '_');
  await Promise.all(
    groups.map(async (group) => {
      // Repeated keys, not the comma list queryString makes of an array: Neutron reads `project_id=a&project_id=b` as either.
      const query = new URLSearchParams([['limit', String(cloudPageSize)], ...group.map((id): [string, string] => [field, id])]);
      for await (const page of network.pages<T>(`/${collection}?${query.toString()}`, key)) for (const raw of page) each(raw);
    }),
  );
}

/** KindAdapter.observeCloud for a Neutron kind: one paginated admin list of the owner's projects' objects (per 120 projects: idsPerList), kept per project. */
export async function observeNeutronCloud(
  ctx: CloudContext,
  collection: string,
  toRemote: (raw: Record<string, unknown>, description: string) => Remote,
): Promise<Map<string, Remote[]>> {
  const out = new Map<string, Remote[]>();
  await neutronListByIds(ctx.apis.network, collection, 'project_id', [...ctx.projects.keys()], (raw) => {
    if (!ctx.projects.has(raw.project_id as string)) return;
    const { marker, description } = parseDescriptionMarker(raw.description);
    if (!marker || marker.owner !== ctx.owner) return;
    bucket(out, raw.project_id, { ...toRemote(raw, description), marker });
  });
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

/** A new marker in the description, the description itself unchanged (KindAdapter.remark). */
export function remarkNeutron(collection: string, singular: string): (ctx: AdapterContext, remote: Remote, marker: Marker) => Promise<void> {
  return async (ctx, remote, marker) => {
    const text = typeof remote.fields.description === 'string' && remote.fields.description !== '' ? remote.fields.description : undefined;
    await ctx.apis.network.put(`/${collection}/${remote.id}`, { [singular]: { description: withDescriptionMarker(text, marker) } });
  };
}

/** Neutron keeps tags behind their own endpoint: one PUT replaces the set. */
export async function putTags(ctx: AdapterContext, collection: string, id: string, tags: unknown): Promise<void> {
  await ctx.apis.network.put(`/${collection}/${id}/tags`, { tags: Array.isArray(tags) ? tags : [] });
}

export function sortedTags(raw: Record<string, unknown>): string[] {
  return Array.isArray(raw.tags) ? [...(raw.tags as string[])].sort() : [];
}

/** Neutron prints IPv6 lower-case and compressed: compare addresses in that form. */
export function canonicalIp(text: string): string {
  return text.includes(':') && ipaddr.IPv6.isValid(text) ? ipaddr.IPv6.parse(text).toString() : text;
}

/**
 * A prefix as Neutron reports it: the address canonical, and the host bits
 * cleared where Neutron clears them (subnet CIDRs, routes) or kept where it
 * keeps them (security group rules).
 */
export function canonicalPrefix(text: string, clearHostBits: boolean): string {
  const slash = text.indexOf('/');
  if (slash < 0) return canonicalIp(text);
  const len = text.slice(slash + 1);
  if (!clearHostBits || !ipaddr.isValidCIDR(text)) return `${canonicalIp(text.slice(0, slash))}/${len}`;
  const network = text.includes(':') ? ipaddr.IPv6.networkAddressFromCIDR(text) : ipaddr.IPv4.networkAddressFromCIDR(text);
  return `${network.toString()}/${len}`;
}

/** Lists whose order means nothing, sorted the same way on both sides of a comparison. */
export function canonicalSort<T>(items: readonly T[]): T[] {
  return items
    .map((item) => ({ item, key: stableJson(item) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((x) => x.item);
}

/** Static routes (subnet host routes, router routes), compared as a set. */
export function canonicalRoutes(routes: readonly { destination: string; nexthop: string }[]): { destination: string; nexthop: string }[] {
  return canonicalSort(routes.map((r) => ({ destination: canonicalPrefix(r.destination, true), nexthop: canonicalIp(r.nexthop) })));
}

/**
 * Fixed addresses as two comparable lists, `<prefix>_subnets` and
 * `<prefix>_addresses`. Neutron fills in what an entry leaves out (an address
 * in the subnet, or the subnet of the address), so the manifest declares a
 * list only when every entry gives that part; Neutron always reports both.
 */
export function observedFixedIps(prefix: string, fixedIps: unknown): Record<string, string[]> {
  const ips = Array.isArray(fixedIps) ? (fixedIps as { subnet_id: string; ip_address: string }[]) : [];
  return { [`${prefix}_subnets`]: ips.map((i) => i.subnet_id).sort(), [`${prefix}_addresses`]: ips.map((i) => canonicalIp(i.ip_address)).sort() };
}

export function desiredFixedIps(prefix: string, entries: readonly { subnet_id?: string; ip_address?: string }[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (entries.every((e) => e.subnet_id !== undefined)) out[`${prefix}_subnets`] = entries.map((e) => e.subnet_id!).sort();
  if (entries.every((e) => e.ip_address !== undefined)) out[`${prefix}_addresses`] = entries.map((e) => canonicalIp(e.ip_address!)).sort();
  return out;
}

/**
 * The one object a lookup matches (an external network or subnet given by
 * filter), memoised for the run: several manifests usually name the same one.
 */
export function lookupOne(
  ctx: AdapterContext,
  collection: string,
  query: Record<string, string | boolean | string[] | undefined>,
  what: string,
): Promise<Record<string, unknown>> {
  if (ctx.offline) return Promise.resolve({ id: lookedUpId(`${what} ${stableJson(query)}`) });
  return ctx.memo(`neutron:${collection}:${stableJson(query)}`, async () => {
    const items = await ctx.apis.network.list<Record<string, unknown>>(`/${collection}`, collection, query);
    const criteria = Object.entries(query)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
      .join(', ');
    if (items.length === 0)
      throw new KupenstackError('lookup.not-found', `no ${what} matches ${criteria}; check the name and tags, and that the project can see it`);
    if (items.length > 1) throw new KupenstackError('lookup.ambiguous', `${items.length} ${what}s match ${criteria}; add criteria (tags) or give its id`);
    return items[0]!;
  });
}

/** A Network manifest, or a pre-existing external network by id or filter. */
export interface ExternalNetworkSelector {
  networkRef?: { name: string };
  network?: { id?: string; filter?: { name?: string; tags?: string[] } };
}

export async function externalNetworkId(ctx: AdapterContext, selector: ExternalNetworkSelector): Promise<string> {
  if (selector.networkRef) return ctx.idOf('Network', selector.networkRef.name);
  if (selector.network?.id) return selector.network.id;
  const filter = selector.network?.filter ?? {};
  const found = await lookupOne(ctx, 'networks', { name: filter.name, tags: filter.tags, 'router:external': true }, 'external network');
  return String(found.id);
}

type ToRemote = (raw: Record<string, unknown>, description: string) => Remote;

function withMarker(raw: Record<string, unknown>, toRemote: ToRemote): Remote {
  const { marker, description } = parseDescriptionMarker(raw.description);
  return marker ? { ...toRemote(raw, description), marker } : toRemote(raw, description);
}

/** One object by id, marker included when it has one; undefined when gone. */
export async function getNeutron(ctx: AdapterContext, collection: string, singular: string, id: string, toRemote: ToRemote): Promise<Remote | undefined> {
  const res = await ctx.apis.network.find<Record<string, Record<string, unknown>>>(`/${collection}/${id}`);
  const raw = res?.[singular];
  return raw ? withMarker(raw, toRemote) : undefined;
}

/** The project's objects matching an import filter, whoever made them (`nameField`: what a filter's name matches). */
export async function findNeutron(ctx: AdapterContext, collection: string, filter: ImportFilter, toRemote: ToRemote, nameField = 'name'): Promise<Remote[]> {
  const query = { project_id: ctx.projectId, [nameField]: filter.name, description: filter.description, tags: filter.tags };
  const items = await ctx.apis.network.list<Record<string, unknown>>(`/${collection}`, collection.replace(/-/g, '_'), query);
  return items.map((raw) => withMarker(raw, toRemote));
}

/** A Neutron object as observed: its name and description (the marker kept out of it) first, the kind's own `fields`, its tags last. */
export function neutronRemote(raw: Record<string, unknown>, description: string, fields: Record<string, unknown>): Remote {
  return {
    id: String(raw.id),
    name: String(raw.name),
    status: String(raw.status),
    raw,
    fields: { name: raw.name, description, ...fields, tags: sortedTags(raw) },
  };
}
