import type { ResolvedDisk } from '../../../oci/disk-source.ts';
import { formatRequest } from '../../../oci/reference.ts';
import { KupenstackError } from '../../errors.ts';
import { memberStatus, settleTags, share, unshare } from '../../glance/members.ts';
import { findSharedImagesProject, sharedImagesProject } from '../../glance/shared-project.ts';
import { declaredDiskFormat, newestFirst, propDigest, versionKey, versionName, versionProperties, type GlanceImage } from '../../glance/version-rules.ts';
import { deleteVersion, findOrCreateVersion, imagesInUse, uploadVersion, type GlanceTarget, type VersionLook } from '../../glance/versions.ts';
import type { ImageSpec } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import type { ServiceClient } from '../../openstack/service.ts';
import { markerFromMetadata, type Marker } from '../../ownership/marker.ts';
import { serialised } from '../../util/concurrency.ts';
import { lookedUpId, pick, type AdapterContext, type Remote, type Waiting } from '../kit/adapter.ts';
import type { Looked } from '../../../lib/progress.ts';
import { resolveManifest, sourceOf, type ImageContext } from './oci.ts';
import { checkImageRoom } from './room.ts';
import { currentTag, currentTags, isCurrentFor, resealing, usePrefix, usesBy, useTag } from './use-tags.ts';

/**
 * The Image kind with `source.oci.sharing: shared` (the default, see
 * sharingOf): one Glance image per
 * digest for the whole cloud, owned by the agent's images project
 * (glance/shared-project.ts), `visibility: shared`, and each project that
 * declares it an accepted member. The second project's import is a member
 * add: no blob byte moves.
 *
 * Which project's manifest uses which version is written on the image as
 * tags (use-tags.ts: no project id nor manifest name a member could read),
 * each added or removed alone. Glance saves an image's whole tag set
 * on each tag call (read, change, write: two calls at once can undo one
 * another), so every change to one image's tags and members goes through
 * one queue per image in this process (`serialised`); between processes a
 * lost change is made again by the next run (a missing use is a create, a
 * stale one a delete):
 * - a use tag: this manifest uses this version (the marker: written before
 *   the membership, so a crash between the two leaves a version the next
 *   run sees and shares);
 * - a current tag: the version the manifest stands for now (a tag move adds
 *   it to the new version, then takes it off the old ones).
 * Retention (`keep`) releases this project's older versions; a version no
 * project uses any more is deleted. The image-level marker (owner, a `ref`
 * of its own) still decides what is ours.
 *
 * Fields: `source` is `oci-shared` (a switch to or from `private` replaces),
 * `digest` as for private copies, `member` the project's membership
 * (`accepted`), `stale_versions` versions still marked current besides the
 * current one, `use_tags` `legacy` while tags of the first format remain.
 */

export const sharedSource = 'oci-shared';
/** The image-level marker's ref: the image belongs to the owner, not to one manifest. */
const sharedRef = 'Image/(shared)';
/** Glance's limit on a tag. */
const maxTag = 255;

const specOf = (m: Manifest): ImageSpec => m.spec;

/** Per-image fields no project may set on a shared image (they are the same for every project that sees it). */
const perImageFields = ['name', 'tags', 'properties', 'visibility', 'protected', 'minDisk', 'minRam', 'allowedProperties'] as const;

/**
 * Shared is the default for an OCI Image: one copy per cloud. A manifest
 * that shapes its own copy (a per-image field below, e.g. `visibility:
 * public` in an admin namespace) gets a private one without saying so;
 * `sharing: private` asks for one explicitly, `sharing: shared` with such a
 * field is refused (refusePerImageFields).
 */
function sharingOf(m: Manifest): 'shared' | 'private' | undefined {
  const spec = specOf(m);
  const oci = spec.source?.oci;
  if (!oci) return undefined;
  if (oci.sharing) return oci.sharing;
  return perImageFields.some((k) => (spec as Record<string, unknown>)[k] !== undefined) ? 'private' : 'shared';
}

export function isSharedManifest(m: Manifest): boolean {
  return sharingOf(m) === 'shared';
}

function tagOf(m: Manifest | undefined, tag: string): string {
  if (tag.length > maxTag) {
    throw new KupenstackError(
      'image.shared-name',
      `${m?.address ?? 'an Image'}: the tag ${tag.slice(0, 40)}… that marks a shared image's use is longer than Glance's ${maxTag} characters; shorten metadata.name or use sharing: private`,
    );
  }
  return tag;
}

function refusePerImageFields(m: Manifest): void {
  const spec = specOf(m) as Record<string, unknown>;
  const set = perImageFields.filter((k) => spec[k] !== undefined);
  if (set.length > 0) {
    throw new KupenstackError(
      'image.shared-fields',
      `${m.address}: spec.${set.join(', spec.')} cannot be set with source.oci.sharing: shared (one Glance image serves every project, ` +
        `with the artifact's name and properties); remove them, or set sharing: private for a copy of this project's own`,
    );
  }
}

export async function sharedDesired(m: Manifest, ctx: ImageContext): Promise<Record<string, unknown>> {
  refusePerImageFields(m);
  const spec = specOf(m);
  const base = { ...pick(spec, { diskFormat: 'disk_format', containerFormat: 'container_format' }), source: sharedSource };
  if (ctx.offline) return { ...base, digest: lookedUpId(`digest of ${formatRequest(spec.source!.oci!)}`) };
  const disk = await resolveManifest(m, ctx);
  return { ...base, digest: disk.manifestDigest, member: 'accepted', stale_versions: [], use_tags: 'sealed' };
}

/** The admin's image client: the images project is nobody's scope; an admin may act on its images and their members. */
function adminImage(ctx: Pick<AdapterContext, 'cloud'>): ServiceClient {
  return ctx.cloud.client('image');
}

const groups = new WeakMap<Remote, GlanceImage[]>();

/** What observing a project's shared versions needs: a per-project context, or one per project of a cloud-wide observe. */
export type SharedScope = Pick<AdapterContext, 'cloud' | 'owner' | 'projectId' | 'memo' | 'trustKnown'>;

/** The project's shared versions, one Remote per manifest (its current version), like withVersions does for private copies. */
export async function sharedObserve(ctx: SharedScope): Promise<Remote[]> {
  const images = await ownedShared(ctx);
  if (images.length === 0) return [];
  const byRef = new Map<string, { specHash: string; versions: GlanceImage[] }>();
  for (const img of images) {
    for (const use of usesBy(img, ctx.projectId)) {
      const g = byRef.get(use.ref) ?? { specHash: use.specHash, versions: [] };
      g.versions.push(img);
      byRef.set(use.ref, g);
    }
  }
  const out: Remote[] = [];
  for (const [ref, g] of byRef) {
    const marked = g.versions.filter((v) => isCurrentFor(v, ctx.projectId, ref));
    const current = newest(marked.length > 0 ? marked : g.versions)!;
    const member = await memberStatus(adminImage(ctx), current.id, ctx.projectId);
    const remote = toSharedRemote(
      current,
      { owner: ctx.owner, ref, specHash: usesBy(current, ctx.projectId).find((u) => u.ref === ref)?.specHash ?? g.specHash },
      member ?? null,
      marked.filter((v) => v.id !== current.id).map((v) => v.id),
      g.versions.some((v) => resealing(v, ctx.projectId, ref).remove.length > 0) ? 'legacy' : 'sealed',
    );
    groups.set(remote, g.versions);
    out.push(remote);
  }
  return out;
}

/** Every shared image of this owner (the marker decides: owner and the shared ref). */
async function ownedShared(ctx: SharedScope): Promise<GlanceImage[]> {
  const project = await ctx.memo('Image:shared-project', () => findSharedImagesProject(ctx.cloud, ctx.owner, ctx.trustKnown));
  if (!project) return [];
  const images = await ctx.memo('Image:shared-images', () => adminImage(ctx).list<GlanceImage>('/images', 'images', { owner: project, visibility: 'all' }));
  return images.filter((i) => isOurs(i, ctx.owner));
}

function isOurs(img: GlanceImage, owner: string): boolean {
  const m = markerFromMetadata(img);
  return m?.owner === owner && m.ref === sharedRef;
}

/** Shared versions carry oci_promoted_at from their creation (ms): two made in the same second keep their order. */
function newest(versions: readonly GlanceImage[]): GlanceImage | undefined {
  return [...versions].sort(newestFirst)[0];
}

/** A project's older versions that `keep` (the current one counted) no longer retains, newest first. */
export function beyondKeep(older: readonly GlanceImage[], keep: number): GlanceImage[] {
  return [...older].sort(newestFirst).slice(Math.max(0, keep - 1));
}

/** `use_tags`: `legacy` while a version still carries tags of the first format (project id and name in clear, use-tags.ts). */
function toSharedRemote(img: GlanceImage, marker: Marker, member: string | null, stale: string[], useTags: 'sealed' | 'legacy' = 'sealed'): Remote {
  return {
    id: img.id,
    name: typeof img.name === 'string' ? img.name : '',
    status: img.status,
    marker,
    raw: img,
    fields: {
      disk_format: declaredDiskFormat(img),
      container_format: img.container_format,
      source: sharedSource,
      digest: img.status === 'queued' ? null : (img[propDigest] ?? null),
      member,
      stale_versions: [...stale].sort(),
      use_tags: useTags,
    },
  };
}

/** Versions of one digest in flight in this process: two projects' runs wait for one transfer, never race two. */
const inflight = new Map<string, Promise<Looked<GlanceImage>>>();

/**
 * The digest's shared image, found (no byte moves) or made and uploaded.
 * Found by digest and marker before any create, and created under
 * uuid5(images project, digest): kill -9 anywhere makes no second image.
 */
async function sharedVersion(ctx: ImageContext, m: Manifest, disk: ResolvedDisk): Promise<Looked<GlanceImage>> {
  const project = await sharedImagesProject(ctx.cloud, ctx.owner);
  const key = `${project}|${versionKey(disk)}`;
  let p = inflight.get(key);
  if (!p) {
    p = makeVersion(ctx, m, disk, project);
    inflight.set(key, p);
    const done = (): void => void inflight.delete(key);
    p.then(done, done);
  }
  return p;
}

async function makeVersion(ctx: ImageContext, m: Manifest, disk: ResolvedDisk, project: string): Promise<Looked<GlanceImage>> {
  const spec = specOf(m);
  const g: GlanceTarget = { image: adminImage(ctx), projectId: project, signal: ctx.signal, requeue: ctx.requeue };
  const base = disk.repository.slice(disk.repository.lastIndexOf('/') + 1);
  const look: VersionLook = {
    name: versionName(base, disk.manifestDigest),
    diskFormat: spec.diskFormat,
    containerFormat: spec.containerFormat,
    visibility: 'shared',
    minDisk: disk.minDisk,
    minRam: disk.minRam,
    properties: versionProperties(disk, [], {}),
    tags: [],
    marker: { owner: ctx.owner, ref: sharedRef, specHash: '' },
    owner: project,
  };
  const found = await findOrCreateVersion(g, disk, look, { hidden: false });
  // Requeue mode: another worker is storing this digest; a later run uses its image.
  if ('waiting' in found) return found;
  const { image } = found.done;
  if (image.status !== 'queued') return { done: image };
  return uploadVersion(g, image, disk, await sourceOf(m, ctx));
}

/** Marks the project's use (the marker first), then makes the project an accepted member. */
async function use(ctx: AdapterContext, m: Manifest, img: GlanceImage, marker: Marker): Promise<void> {
  const admin = adminImage(ctx);
  await onImage(img.id, async () => {
    // Tags of the first format (project id and name in clear) give way to sealed ones.
    const legacy = resealing(img, ctx.projectId, marker.ref);
    const add = [tagOf(m, useTag(ctx.projectId, marker)), tagOf(m, currentTag(ctx.projectId, marker.ref)), ...legacy.add];
    await settleTags(admin, img.id, { add, remove: legacy.remove }, ctx.signal);
    await share(admin, img.id, ctx.projectId, ctx.signal);
  });
}

/** One queue per shared image: its tags are read-modify-written by Glance (see the top of this file). */
const onImage = <T>(id: string, work: () => Promise<T>): Promise<T> => serialised(`glance-image:${id}`, work);

const dropCurrent = (ctx: AdapterContext, id: string, ref: string): Promise<void> =>
  onImage(id, () => settleTags(adminImage(ctx), id, { remove: currentTags(ctx.projectId, ref) }, ctx.signal));

export async function sharedCreate(ctx: ImageContext, m: Manifest, marker: Marker): Promise<Remote> {
  refusePerImageFields(m);
  const disk = await resolveManifest(m, ctx);
  await checkImageRoom(ctx, m.address, disk);
  const version = await sharedVersion(ctx, m, disk);
  // A create never waits (kinds/kit/adapter.ts): another worker storing the digest fails it for this run.
  if ('waiting' in version) throw new KupenstackError('image.oci-busy', `${version.waiting.reason}; the next run uses it`);
  const img = version.done;
  await use(ctx, m, img, marker);
  return toSharedRemote(img, marker, 'accepted', []);
}

/** A moved tag (a new digest: its version found or imported, then used), a missing membership, versions still marked current. */
export async function sharedUpdate(ctx: ImageContext, remote: Remote, changes: Record<string, unknown>, m: Manifest): Promise<Remote | Waiting | undefined> {
  const marker = remote.marker;
  if (!marker) throw new KupenstackError('internal', `shared Glance image ${remote.id} carries no marker`);
  const admin = adminImage(ctx);
  const versions = groups.get(remote) ?? [remote.raw as GlanceImage];
  const disk = await resolveManifest(m, ctx);
  if ('digest' in changes && remote.raw[propDigest] !== disk.manifestDigest) {
    await checkImageRoom(ctx, m.address, disk);
    const version = await sharedVersion(ctx, m, disk);
    if ('waiting' in version) return version;
    const next = version.done;
    await use(ctx, m, next, marker);
    for (const old of versions.filter((v) => v.id !== next.id && isCurrentFor(v, ctx.projectId, marker.ref))) await dropCurrent(ctx, old.id, marker.ref);
    await retain(
      ctx,
      versions.filter((v) => v.id !== next.id),
      marker,
      specOf(m).keep ?? 3,
    );
    return toSharedRemote(next, marker, 'accepted', []);
  }
  if ('digest' in changes) {
    // The current version is still queued (a transfer cut short): the shared path finishes it.
    const version = await sharedVersion(ctx, m, disk);
    if ('waiting' in version) return version;
  }
  if ('member' in changes) await onImage(remote.id, () => share(admin, remote.id, ctx.projectId, ctx.signal));
  if ('use_tags' in changes) for (const v of versions) await reseal(ctx, v, marker.ref);
  if ('stale_versions' in changes) {
    for (const old of versions.filter((v) => v.id !== remote.id && isCurrentFor(v, ctx.projectId, marker.ref))) await dropCurrent(ctx, old.id, marker.ref);
  }
  return undefined;
}

/** One version's tags of the first format for this manifest, replaced by sealed ones (read again: the observed tags may be old). */
async function reseal(ctx: AdapterContext, img: GlanceImage, ref: string): Promise<void> {
  const admin = adminImage(ctx);
  await onImage(img.id, async () => {
    const now = await admin.find<GlanceImage>(`/images/${img.id}`);
    if (!now || !isOurs(now, ctx.owner)) return;
    const change = resealing(now, ctx.projectId, ref);
    if (change.remove.length > 0) await settleTags(admin, img.id, change, ctx.signal);
  });
}

/** `keep` counts the project's own versions (the current one included); the older ones, unless a server of the project boots from them, are released. */
async function retain(ctx: AdapterContext, older: readonly GlanceImage[], marker: Marker, keep: number): Promise<void> {
  const beyond = beyondKeep(older, keep);
  if (beyond.length === 0) return;
  const inUse = await imagesInUse({ image: ctx.apis.image, compute: ctx.apis.compute, projectId: ctx.projectId, signal: ctx.signal });
  for (const v of beyond.filter((x) => !inUse.has(x.id))) await release(ctx, v, marker.ref);
}

/**
 * The project lets go of one version for one manifest: its tags go, then
 * its membership when no other manifest of the project uses the version,
 * then the image when no project uses it any more.
 */
async function release(ctx: AdapterContext, img: GlanceImage, ref: string): Promise<void> {
  const admin = adminImage(ctx);
  await onImage(img.id, async () => {
    // Read again: another manifest of this run may have changed the tags since observe.
    const before = await admin.find<GlanceImage>(`/images/${img.id}`);
    if (!before || !isOurs(before, ctx.owner)) return;
    await settleTags(
      admin,
      img.id,
      {
        remove: [
          ...usesBy(before, ctx.projectId)
            .filter((x) => x.ref === ref)
            .map((u) => u.tag),
          ...currentTags(ctx.projectId, ref),
        ],
      },
      ctx.signal,
    );
    const now = await admin.find<GlanceImage>(`/images/${img.id}`);
    if (!now || !isOurs(now, ctx.owner)) return;
    if (usesBy(now, ctx.projectId).length === 0) {
      await unshare(admin, img.id, ctx.projectId, ctx.signal);
    }
    if ((now.tags ?? []).some((t) => t.startsWith(usePrefix))) return;
    await deleteVersion({ image: admin, projectId: String(now.owner), signal: ctx.signal }, img.id);
  });
}

/** The manifest is gone: the project releases every version it used for it (the last project out deletes the image). */
export async function sharedDelete(ctx: AdapterContext, remote: Remote): Promise<void> {
  const ref = remote.marker?.ref;
  if (!ref) throw new KupenstackError('internal', `shared Glance image ${remote.id} carries no marker`);
  const versions = groups.get(remote) ?? [remote.raw as GlanceImage];
  for (const v of versions) await release(ctx, v, ref);
}
