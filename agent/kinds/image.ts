import { pipeline, Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { fetch } from 'undici';
import { KupenstackError } from '../errors.ts';
import type { Manifest } from '../model/manifest.ts';
import { OpenStackError } from '../openstack/errors.ts';
import { markerFromMetadata, markerMetadata, ownerTag, ownerTagPrefix } from '../ownership/marker.ts';
import { openstackName, pick, type AdapterContext, type Health, type KindAdapter, type Remote } from './adapter.ts';
import { checkDeclaredFormat, HoldBackSha256, patchImage, peek, pointer, putImageData, sniffBytes, sniffDiskFormat, type PatchOp } from './glance.ts';
import { uuid5 } from './names.ts';
import { isOciManifest, ociCreate, ociDelete, ociDesired, ociFields, ociFollows, ociUpdate, ociVersionsOf, withVersions } from './image-oci-kind.ts';
import { propDigest } from './image-oci-versions.ts';

/**
 * Glance images from an HTTP(S) URL or an OCI registry (image-oci-kind.ts:
 * one Glance image per digest, the channel moving between them).
 *
 * create() is one POST carrying the marker (properties + owner tag) and the
 * source URL (`kupenstack_source`); the image is then `queued`, without data.
 * The data is the `content` field: observed as the source URL once Glance
 * holds data (any status but `queued`), null before; its update streams the
 * URL into `PUT /images/{id}/file`. A Glance status, unlike a property written
 * after the upload, cannot disagree with the data that is really there.
 *
 * Ids are uuid5(project, manifest, source): a retried create answers 409 and
 * is adopted. Glance never frees the id of a deleted image, so after a delete
 * the next create walks on to `…#1`, `…#2`: still deterministic.
 */

type RawImage = Record<string, unknown>;

const sourceKey = 'kupenstack_source';
const sourceShaKey = 'kupenstack_source_sha256';
/** Image attributes Glance defines; every other key is a property. */
const coreAttributes = new Set([
  'id', 'name', 'status', 'visibility', 'protected', 'checksum', 'owner', 'size', 'virtual_size', 'min_ram', 'min_disk', 'disk_format', 'container_format',
  'created_at', 'updated_at', 'tags', 'self', 'file', 'schema', 'os_hidden', 'os_hash_algo', 'os_hash_value', 'locations', 'direct_url', 'stores',
]);
/** Long enough for a large disk over a slow link; the caller's signal still cancels. */
const uploadTimeoutMs = 12 * 3600_000;
const maxIdAttempts = 100;

interface UrlSource {
  url: string;
  sha256?: string;
}

function urlSource(m: Manifest): UrlSource | undefined {
  const source = m.spec.source as { url?: UrlSource } | undefined;
  return source?.url ? { url: source.url.url, ...(source.url.sha256 ? { sha256: source.url.sha256 } : {}) } : undefined;
}

export function imageId(projectId: string, address: string, source: UrlSource, attempt: number): string {
  return uuid5(`image:${projectId}/${address}@${source.url}#sha256=${source.sha256 ?? ''}${attempt > 0 ? `#${attempt}` : ''}`);
}

export function toRemote(raw: RawImage): Remote {
  const properties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (!coreAttributes.has(k) && !k.startsWith('kupenstack_') && !k.startsWith('os_glance_') && !ociFields.internal.has(k)) properties[k] = v;
  const digest = typeof raw[propDigest] === 'string' ? raw[propDigest] : undefined;
  const tags = Array.isArray(raw.tags) ? (raw.tags as string[]).filter((t) => !t.startsWith(ownerTagPrefix)).sort() : [];
  const url = typeof raw[sourceKey] === 'string' ? raw[sourceKey] : undefined;
  const sha = typeof raw[sourceShaKey] === 'string' ? raw[sourceShaKey] : undefined;
  const marker = markerFromMetadata(raw);
  return {
    id: String(raw.id),
    name: typeof raw.name === 'string' ? raw.name : '',
    status: String(raw.status),
    ...(marker ? { marker } : {}),
    raw,
    fields: {
      name: raw.name,
      disk_format: raw.disk_format,
      container_format: raw.container_format,
      visibility: raw.visibility,
      protected: raw.protected,
      min_disk: raw.min_disk,
      min_ram: raw.min_ram,
      properties,
      tags,
      source: digest ? 'oci' : url ? { url, ...(sha ? { sha256: sha } : {}) } : null,
      content: raw.status === 'queued' ? null : (digest ?? url ?? null),
    },
  };
}

export const image: KindAdapter = {
  impact: {
    onDelete: { code: 'image-deleted', message: 'the image is deleted: servers and volumes can no longer be rebuilt from it' },
    fields: { content: { note: 'an OCI source moved: a new Glance image takes the name, the old one is hidden and kept', newId: true } },
  },
  kind: 'Image',
  fields: {
    name: 'update',
    disk_format: 'replace',
    container_format: 'replace',
    visibility: 'update',
    protected: 'update',
    min_disk: 'update',
    min_ram: 'update',
    properties: 'update',
    tags: 'update',
    source: 'replace',
    content: 'update',
    stale_versions: 'update',
  },
  follows: ociFollows,

  async observe(ctx) {
    // Hidden images (older OCI versions) are left out of a plain list, and `os_hidden=true` lists only them: two lists.
    const query = { owner: ctx.projectId, tag: ownerTag(ctx.owner), visibility: 'all' };
    const [shown, hidden] = await Promise.all([ctx.apis.image.list<RawImage>('/images', 'images', query), ctx.apis.image.list<RawImage>('/images', 'images', { ...query, os_hidden: true })]);
    // OCI versions of one manifest collapse into its current version; the others ride along for moves and retention.
    return withVersions([...shown, ...hidden].filter((raw) => markerFromMetadata(raw)?.owner === ctx.owner));
  },

  desired(m, ctx) {
    if (isOciManifest(m)) return ociDesired(m, ctx);
    const spec = m.spec;
    const out: Record<string, unknown> = {
      name: openstackName(m),
      ...pick(spec, { diskFormat: 'disk_format', containerFormat: 'container_format', visibility: 'visibility', protected: 'protected', minDisk: 'min_disk', minRam: 'min_ram', properties: 'properties' }),
    };
    if (Array.isArray(spec.tags)) out.tags = [...(spec.tags as string[])].sort();
    const source = urlSource(m);
    if (source) {
      out.source = source;
      out.content = source.url;
    }
    return out;
  },

  async create(ctx, m, desired, marker) {
    if (isOciManifest(m)) return ociCreate(ctx, m, marker);
    const source = urlSource(m);
    if (!source) throw new KupenstackError('image.no-source', 'an Image without spec.source can only be imported (spec.import)');
    const body: Record<string, unknown> = {
      ...((desired.properties ?? {}) as Record<string, string>),
      name: desired.name,
      // Glance's defaults (no container format, visibility `shared`) are not ours.
      container_format: desired.container_format ?? 'bare',
      visibility: desired.visibility ?? 'private',
      ...pick(desired, { disk_format: 'disk_format', protected: 'protected', min_disk: 'min_disk', min_ram: 'min_ram' }),
      ...markerMetadata(marker),
      [sourceKey]: source.url,
      ...(source.sha256 ? { [sourceShaKey]: source.sha256 } : {}),
      tags: [...((desired.tags ?? []) as string[]), ownerTag(marker.owner)],
    };
    for (let attempt = 0; attempt < maxIdAttempts; attempt++) {
      const id = imageId(ctx.projectId, m.address, source, attempt);
      try {
        return toRemote(await ctx.apis.image.post<RawImage>('/images', { ...body, id }, [201]));
      } catch (err) {
        if (!(err instanceof OpenStackError && err.conflict)) throw err;
        // A live image holds the id: this manifest's own earlier create, which the engine adopts through observe.
        if (await ctx.apis.image.find(`/images/${id}`)) throw err;
        // Deleted: Glance keeps the id taken forever; take the next one in the sequence.
      }
    }
    throw new KupenstackError('image.ids-exhausted', `${maxIdAttempts} images of ${m.address} with this source were already created and deleted; change the source or rename the manifest`);
  },

  async update(ctx, remote, changes, m) {
    if (isOciManifest(m) || ociVersionsOf(remote)) {
      const moved = await ociUpdate(ctx, remote, changes, m);
      if (moved) return moved;
    }
    const ops: PatchOp[] = [];
    for (const key of ['name', 'visibility', 'protected', 'min_disk', 'min_ram']) if (key in changes) ops.push({ op: 'replace', path: `/${key}`, value: changes[key] });
    if ('properties' in changes) {
      const want = (changes.properties ?? {}) as Record<string, string>;
      const have = (remote.fields.properties ?? {}) as Record<string, unknown>;
      for (const [k, v] of Object.entries(want)) if (have[k] !== v) ops.push({ op: 'add', path: pointer(k), value: v });
      for (const k of Object.keys(have)) if (!(k in want)) ops.push({ op: 'remove', path: pointer(k) });
    }
    if ('tags' in changes) {
      const own = ((remote.raw.tags ?? []) as string[]).filter((t) => t.startsWith(ownerTagPrefix));
      ops.push({ op: 'replace', path: '/tags', value: [...((changes.tags ?? []) as string[]), ...own] });
    }
    if (ops.length > 0) await patchImage(ctx.apis.image, remote.id, ops, ctx.signal);
    if ('content' in changes && changes.content && !isOciManifest(m)) await upload(ctx, remote, m);
  },

  async delete(ctx, remote) {
    if (ociVersionsOf(remote)) return ociDelete(ctx, remote);
    await deleteImage(ctx, remote.id);
  },

  async get(ctx, id) {
    const raw = await ctx.apis.image.find<RawImage>(`/images/${encodeURIComponent(id)}`);
    return raw ? toRemote(raw) : undefined;
  },

  async find(ctx, filter) {
    const q = new URLSearchParams();
    if (filter.name !== undefined) q.set('name', filter.name);
    // Glance matches any non-attribute key as an exact property; several `tag` keys must all be present.
    if (filter.description !== undefined) q.set('description', filter.description);
    for (const t of filter.tags ?? []) q.append('tag', t);
    const items = await ctx.apis.image.list<RawImage>(`/images?${q.toString()}`, 'images');
    return items.map(toRemote);
  },

  health(remote): Health {
    switch (remote.status) {
      case 'active':
        return { state: 'ready' };
      case 'queued':
        return { state: 'progressing', reason: 'image created, data not uploaded yet', waitsForUpdate: true };
      case 'saving':
      case 'uploading':
      case 'importing':
        return { state: 'progressing', reason: `Glance status ${remote.status}` };
      default:
        return { state: 'failed', reason: `Glance status ${String(remote.status)}` };
    }
  },
};

/**
 * Streams the URL into Glance with constant memory: download → sniff the
 * first 64 KiB → sha256 (last chunk held back) → PUT /file. A refused disk
 * (wrong checksum, format or an unsafe qcow2) leaves the image queued, then
 * deletes it: nothing unverified stays in Glance.
 */
async function upload(ctx: AdapterContext, remote: Remote, m: Manifest): Promise<void> {
  const source = urlSource(m);
  if (!source) throw new KupenstackError('image.no-source', 'nothing to upload: the manifest has no spec.source.url');
  if (remote.status !== 'queued') {
    throw new KupenstackError('image.data-immutable', `Glance image ${remote.id} is ${String(remote.status)}: image data is written once; a new source makes a new image`);
  }
  const res = await fetch(source.url, { signal: ctx.signal });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new KupenstackError('image.download', `GET ${source.url} answered ${res.status} ${res.statusText}; the image stays queued and the download is retried on the next run`);
  }
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  const { head, stream } = await peek(body, sniffBytes);
  let format: string;
  try {
    format = sniffDiskFormat(head);
    const declared = typeof m.spec.diskFormat === 'string' ? m.spec.diskFormat : undefined;
    if (declared) checkDeclaredFormat(declared, format);
  } catch (err) {
    // Never started, the combined stream would not close the download itself.
    body.destroy();
    stream.destroy();
    await deleteImage(ctx, remote.id);
    throw err;
  }
  if (!remote.fields.disk_format) await patchImage(ctx.apis.image, remote.id, [{ op: 'replace', path: '/disk_format', value: format }], ctx.signal);
  const verifier = new HoldBackSha256(source.sha256);
  // pipeline() forwards a download error to the verifier, which aborts the PUT.
  const data = pipeline(stream, verifier, () => undefined);
  try {
    await putImageData(ctx.apis.image, remote.id, data, { timeoutMs: uploadTimeoutMs, signal: ctx.signal });
  } catch (err) {
    if (verifier.mismatch) {
      await deleteImage(ctx, remote.id);
      throw verifier.mismatch;
    }
    throw err;
  }
}

/** Deletes an image of ours; a protected one is unprotected first (the schema promises it). */
async function deleteImage(ctx: AdapterContext, id: string): Promise<void> {
  const url = `/images/${id}`;
  const res = await ctx.apis.image.call('DELETE', url, { ok: [204, 403, 404], signal: ctx.signal });
  if (res.status !== 403) return;
  await patchImage(ctx.apis.image, id, [{ op: 'replace', path: '/protected', value: false }], ctx.signal);
  await ctx.apis.image.remove(url);
}
