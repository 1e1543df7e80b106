import { KupenstackError } from '../../errors.ts';
import { deleteImage, patchImage, pointer, type PatchOp } from '../../glance/image-api.ts';
import { propTag } from '../../glance/version-rules.ts';
import { ownerTag, ownerTagPrefix, markerFromMetadata, markerMetadata } from '../../ownership/marker.ts';
import type { Health, KindAdapter } from '../kit/adapter.ts';
import { isOciManifest, ociCreate, ociDelete, ociDesired, ociFollows, ociUpdate, ociVersionsOf, withVersions } from './oci.ts';
import { toRemote, type RawImage } from './remote.ts';
import { statusVersions } from './status-versions.ts';
import { isSharedManifest, sharedCreate, sharedDelete, sharedDesired, sharedObserve, sharedSource, sharedUpdate } from './shared.ts';
import { urlCreate, urlDesired, urlUpload } from './url.ts';
import { byProjectField } from '../kit/ownership.ts';

/**
 * Glance images from an HTTP(S) URL (url.ts) or an OCI registry (oci.ts).
 *
 * A tag moves, step by step (source.oci.tag `0.6` now names another digest):
 * 1. Detect: desired() resolves the tag (oci.ts `resolveManifest`, as often
 *    as oci-poll.ts allows); `digest` becomes the new manifest digest, the
 *    observed `digest` is the current version's (remote.ts), so the generic
 *    diff sees an update of `digest`.
 * 2. Plan: `impact.fields.digest.newId` makes references "known after
 *    apply"; `follows` gives the plan its ⟳ line (reference, from, to).
 * 3. Move: update() → oci.ts `moveTag`: the digest's version is found or
 *    made hidden and uploaded (glance/versions.ts `findOrCreateVersion`,
 *    `uploadVersion`), then `promote`d (takes the name, shown, `oci-tag:`),
 *    then the old versions `demote`d (hidden, renamed `name@sha256:…`).
 * 4. Retention: glance/versions.ts `applyRetention` deletes versions beyond
 *    `keep` that are hidden, untagged, unprotected and used by no server.
 * 5. VMs: the manifest's object has a new Glance id; VirtualMachines follow
 *    it only with `onImageUpdate: rebuild` (kinds/virtualmachine/).
 *
 * With `source.oci.sharing: shared` (shared.ts) the versions are the
 * cloud's one image per digest in the agent's images project: the project
 * is a member of them instead of owning copies, and the steps above are
 * tags and memberships on those images.
 */

export const image: KindAdapter = {
  impact: {
    onDelete: { code: 'image-deleted', message: 'the image is deleted: servers and volumes can no longer be rebuilt from it' },
    fields: { digest: { note: 'an OCI source moved: a new Glance image takes the name, the old one is hidden and kept', newId: true } },
  },
  kind: 'Image',
  ownership: byProjectField(
    ['owner'],
    "an image: its owner is the namespace's project (a public or community image is usable, never adoptable)",
    (raw) => raw.visibility === 'public' || raw.visibility === 'community',
  ),
  service: 'image',
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
    digest: 'update',
    stale_versions: 'update',
    member: 'update',
    use_tags: 'update',
  },
  follows: ociFollows,
  sharedAction: (action, fields) => (fields.source !== sharedSource ? undefined : action === 'create' ? 'share' : 'unshare'),

  report: (remote) => ({
    // A URL image's `digest` field holds its URL: only an OCI digest is reported as one.
    ...(typeof remote.fields.digest === 'string' && remote.fields.digest.startsWith('sha256:') ? { digest: remote.fields.digest } : {}),
    ...(typeof remote.raw[propTag] === 'string' ? { resolvedTag: remote.raw[propTag] } : {}),
    ...statusVersions(remote),
  }),

  async observe(ctx) {
    // Hidden images (older OCI versions) are left out of a plain list, and `os_hidden=true` lists only them: two lists.
    const query = { owner: ctx.projectId, tag: ownerTag(ctx.owner), visibility: 'all' };
    const [shown, hidden] = await Promise.all([
      ctx.apis.image.list<RawImage>('/images', 'images', query),
      ctx.apis.image.list<RawImage>('/images', 'images', { ...query, os_hidden: true }),
    ]);
    // OCI versions of one manifest collapse into its current version; the others ride along for moves and retention.
    // Shared images live in the images project: the project's uses are found by their tags (shared.ts).
    return [...withVersions([...shown, ...hidden].filter((raw) => markerFromMetadata(raw)?.owner === ctx.owner)), ...(await sharedObserve(ctx))];
  },

  async observeCloud(ctx) {
    // Glance's admin list: no owner filter, every project's images carrying our tag; kept per owner project.
    const byProject = new Map<string, RawImage[]>();
    const query = { tag: ownerTag(ctx.owner), visibility: 'all', limit: 1000 };
    for (const hidden of [false, true]) {
      for await (const page of ctx.apis.image.pages<RawImage>('/images', 'images', hidden ? { ...query, os_hidden: true } : query)) {
        for (const raw of page) {
          const owner = raw.owner;
          if (typeof owner !== 'string' || !ctx.projects.has(owner) || markerFromMetadata(raw)?.owner !== ctx.owner) continue;
          byProject.set(owner, [...(byProject.get(owner) ?? []), raw]);
        }
      }
    }
    const out = new Map([...byProject].map(([projectId, raws]) => [projectId, withVersions(raws)]));
    // Shared versions live in the images project, found by each project's use tags: one list of them for all projects.
    const memos = new Map<string, Promise<unknown>>();
    const memo = <T>(key: string, load: () => Promise<T>): Promise<T> => {
      if (!memos.has(key)) memos.set(key, load());
      return memos.get(key) as Promise<T>;
    };
    for (const projectId of ctx.projects.keys()) {
      const shared = await sharedObserve({ cloud: ctx.cloud, owner: ctx.owner, projectId, memo });
      if (shared.length > 0) out.set(projectId, [...(out.get(projectId) ?? []), ...shared]);
    }
    return out;
  },

  desired(m, ctx) {
    if (!isOciManifest(m) && m.spec.verify !== undefined)
      throw new KupenstackError(
        'image.signature',
        `${m.address}: spec.verify checks cosign signatures of OCI images; a source.url image is checked by its sha256: remove verify`,
      );
    if (isSharedManifest(m)) return sharedDesired(m, ctx);
    return isOciManifest(m) ? ociDesired(m, ctx) : urlDesired(m);
  },

  async create(ctx, m, desired, marker) {
    if (isSharedManifest(m)) return sharedCreate(ctx, m, marker);
    return isOciManifest(m) ? ociCreate(ctx, m, marker) : urlCreate(ctx, m, desired, marker);
  },

  async update(ctx, remote, changes, m) {
    if (remote.fields.source === sharedSource) return isSharedManifest(m) ? sharedUpdate(ctx, remote, changes, m) : undefined;
    if (isOciManifest(m) || ociVersionsOf(remote)) {
      const moved = await ociUpdate(ctx, remote, changes, m);
      if (moved) return moved;
    }
    const ops: PatchOp[] = [];
    for (const key of ['name', 'visibility', 'protected', 'min_disk', 'min_ram'])
      if (key in changes) ops.push({ op: 'replace', path: `/${key}`, value: changes[key] });
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
    if ('digest' in changes && changes.digest && !isOciManifest(m)) await urlUpload(ctx, remote, m);
  },

  async delete(ctx, remote) {
    if (remote.fields.source === sharedSource) return sharedDelete(ctx, remote);
    if (ociVersionsOf(remote)) return ociDelete(ctx, remote);
    await deleteImage(ctx.apis.image, remote.id, ctx.signal);
  },

  async remark(ctx, remote, marker) {
    // One PATCH: the marker's properties and the owner tag beside the user's tags (observe lists by that tag).
    const tags = ((remote.raw.tags ?? []) as string[]).filter((t) => t !== ownerTag(marker.owner));
    const ops: PatchOp[] = Object.entries(markerMetadata(marker)).map(([k, v]) => ({ op: 'add', path: pointer(k), value: v }));
    ops.push({ op: 'replace', path: '/tags', value: [...tags, ownerTag(marker.owner)] });
    await patchImage(ctx.apis.image, remote.id, ops, ctx.signal);
  },

  async get(ctx, id) {
    // A shared image is not looked up by id (its Remote needs the project's uses): only private ones come here.
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
