import { pipeline } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { isWaiting, waiting, type Looked } from '../../lib/progress.ts';
import type { DiskSource, OpenedDisk, ResolvedDisk } from '../../oci/disk-source.ts';
import { KupenstackError } from '../errors.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { ServiceClient } from '../openstack/service.ts';
import { markerFromMetadata, markerMetadata, ownerTag, ownerTagPrefix, type Marker } from '../ownership/marker.ts';
import { checkDeclaredFormat } from '../../lib/disk/sniff.ts';
import { HoldBackLast } from '../../lib/stream/hold-back.ts';
import { retry } from '../../lib/retry.ts';
import { deleteImage, patchImage, pointer, putImageData, type PatchOp } from './image-api.ts';
import { importStagedVersion, markSourceFormat } from './converted-version.ts';
import { uploadWayFor } from './raw-target.ts';
import {
  creationProperties,
  ociImageId,
  ociTagPrefix,
  propDigest,
  propPromotedAt,
  propSupersededAt,
  propSupersededBy,
  retentionVictims,
  sameDisk,
  versionKey,
  versionName,
  type GlanceImage,
} from './version-rules.ts';

/**
 * The Glance side of the OCI pipeline, shared by the Image kind and
 * `kupenstack image import` (agent/glance/import.ts): find a version by digest (hidden ones too),
 * create it under a deterministic id, stream the disk into it, move the
 * image name and `oci-tag:` tag between versions (promote, demote), and
 * apply retention. The order of a tag move is mapped in kinds/image/adapter.ts.
 */

export interface GlanceTarget {
  image: ServiceClient;
  /** For retention: which versions servers still use. */
  compute?: ServiceClient;
  projectId: string;
  signal?: AbortSignal | undefined;
  /** Progress by requeue (the controller): another worker's upload is looked at once and answered as waiting (lib/progress.ts), never waited for. */
  requeue?: boolean | undefined;
  log?: (line: string) => void;
}

/** How a version looks in Glance (the image name and tags are the promoted version's). */
export interface VersionLook {
  name: string;
  diskFormat?: string | undefined;
  containerFormat?: string | undefined;
  visibility?: string | undefined;
  protected?: boolean | undefined;
  minDisk?: number | undefined;
  minRam?: number | undefined;
  properties: Record<string, string>;
  /** User tags plus `oci-tag:<tag>`; the owner tag is added from the marker. */
  tags: string[];
  /** The Image manifest's marker; absent for `kupenstack image import`. */
  marker?: Marker | undefined;
  /** The owning project when it is not the caller's scope (a shared image, made by the admin for the images project). */
  owner?: string | undefined;
}

export interface TransferProgress {
  bytesSent: number;
  bytesFromRegistry: number;
  total?: number | undefined;
}

/** Blob bytes read from registries by this process: tests and the benchmark read the delta. */
export const ociTransfers = { blobBytes: 0, uploads: 0 };

/** Upload attempts of one version before its queued image is deleted. */
const uploadAttempts = 3;
/** Chunks to Glance are gathered to this size: fewer, larger HTTP chunks cost Glance (Python) less per byte. */
const uploadChunkBytes = 1024 * 1024;
const uploadTimeoutMs = 12 * 3600_000;
/** An upload Glance still calls `saving` after this long was cut off without Glance noticing. */
const stalledAfterMs = 3600_000;
const maxIdAttempts = 100;
/** How long a worker waits for another's upload of the same image (two agents, or a re-run after kill -9 while the old upload runs on) before leaving it to the next run. */
const otherUploadWaitMs = 120_000;
const otherUploadPollMs = 1_000;

const usable = new Set(['active', 'deactivated']);
const inFlight = new Set(['saving', 'importing', 'uploading']);

/** Glance refused our PUT because another worker's upload of this image is under way (its queued → saving step is atomic). */
class LostUploadRace extends Error {}

/**
 * Waits while another worker stores the image: the image once it is usable,
 * undefined when it is queued again (that upload failed: ours may run);
 * in requeue mode one look, then waiting.
 * Anything else, or no end within otherUploadWaitMs, is an error that
 * deletes nothing: the image is the other worker's to finish or clean up.
 */
async function awaitOtherUpload(g: GlanceTarget, id: string, digest: string): Promise<Looked<GlanceImage | undefined>> {
  const deadline = Date.now() + otherUploadWaitMs;
  for (;;) {
    const now = await g.image.find<GlanceImage>(`/images/${id}`);
    if (now && usable.has(now.status)) return { done: now };
    if (now?.status === 'queued') return { done: undefined };
    if (!now || !inFlight.has(now.status))
      throw new KupenstackError(
        'image.oci-upload',
        `Glance image ${id} of ${digest}, stored by another worker, ended ${now ? now.status : 'deleted'}; the next run imports it again`,
      );
    if (g.requeue) return waiting(`Glance image ${id} is receiving ${digest} from another worker (status ${now.status})`, otherUploadPollMs * 5);
    if (Date.now() > deadline)
      throw new KupenstackError(
        'image.oci-busy',
        `Glance image ${id} is receiving ${digest} from another worker (status ${now.status}) for more than ${otherUploadWaitMs / 1000} s; the next run uses it`,
      );
    await sleep(otherUploadPollMs, undefined, g.signal ? { signal: g.signal } : {});
  }
}

/** Every image of the project carrying this manifest digest, shown and hidden (Glance lists them apart). */
async function versionsByDigest(g: GlanceTarget, digest: string): Promise<GlanceImage[]> {
  const query = { owner: g.projectId, visibility: 'all', [propDigest]: digest };
  const [shown, hidden] = await Promise.all([
    g.image.list<GlanceImage>('/images', 'images', query),
    g.image.list<GlanceImage>('/images', 'images', { ...query, os_hidden: true }),
  ]);
  return [...shown, ...hidden];
}

/** Ours to reuse: the same manifest's, or unmarked (a `kupenstack image import`), never another owner's or manifest's. */
function compatible(img: GlanceImage, marker: Marker | undefined): boolean {
  const theirs = markerFromMetadata(img);
  if (!theirs) return true;
  return marker !== undefined && theirs.owner === marker.owner && theirs.ref === marker.ref;
}

function age(img: GlanceImage): number {
  return Date.now() - (Date.parse(String(img.updated_at ?? img.created_at ?? '')) || 0);
}

/**
 * The version for this digest: an existing one (dedupe; an unmarked one is
 * adopted by the marker), or a new queued image. Never a second image for a
 * digest that Glance already holds: this is what makes the same digest
 * transfer once.
 */
export async function findOrCreateVersion(
  g: GlanceTarget,
  disk: ResolvedDisk,
  look: VersionLook,
  options: { hidden: boolean },
): Promise<Looked<{ image: GlanceImage; created: boolean }>> {
  if (look.diskFormat) checkDeclaredFormat(look.diskFormat, disk.diskFormat);
  for (const img of (await versionsByDigest(g, disk.manifestDigest)).filter((i) => compatible(i, look.marker) && sameDisk(i, disk))) {
    if (usable.has(img.status) || img.status === 'queued') return { done: { image: await adopt(g, img, look.marker), created: false } };
    if (inFlight.has(img.status)) {
      if (age(img) < stalledAfterMs) {
        // Another worker is storing this digest right now: its image is awaited, never a second one made.
        const other = await awaitOtherUpload(g, img.id, disk.manifestDigest);
        if (isWaiting(other)) return other;
        if (other.done) return { done: { image: await adopt(g, other.done, look.marker), created: false } };
        continue;
      }
      await deleteVersion(g, img.id);
    }
    // killed, pending_delete, deleted: not usable, and the id walk below steps over them.
  }
  const body: Record<string, unknown> = {
    ...look.properties,
    ...creationProperties(disk),
    name: options.hidden ? versionName(look.name, disk.manifestDigest) : look.name,
    disk_format: look.diskFormat ?? disk.diskFormat,
    container_format: look.containerFormat ?? 'bare',
    visibility: look.visibility ?? 'private',
    ...(look.owner !== undefined ? { owner: look.owner } : {}),
    os_hidden: options.hidden,
    tags: options.hidden ? look.tags.filter((t) => !t.startsWith(ociTagPrefix)) : look.tags,
    ...(look.protected !== undefined ? { protected: look.protected } : {}),
    ...((look.minDisk ?? disk.minDisk) !== undefined ? { min_disk: look.minDisk ?? disk.minDisk } : {}),
    ...((look.minRam ?? disk.minRam) !== undefined ? { min_ram: look.minRam ?? disk.minRam } : {}),
    ...(options.hidden ? {} : { [propPromotedAt]: new Date().toISOString() }),
  };
  if (look.marker) {
    Object.assign(body, markerMetadata(look.marker));
    body.tags = [...(body.tags as string[]), ownerTag(look.marker.owner)];
  }
  // A cloud that wants raw but cannot convert this format refuses before an image is made (each one made and deleted spends an id).
  await uploadWayFor(g.image, String(body.disk_format), g.signal);
  for (let attempt = 0; attempt < maxIdAttempts; attempt++) {
    const id = ociImageId(g.projectId, versionKey(disk), attempt);
    try {
      return { done: { image: await g.image.post<GlanceImage>('/images', { ...body, id }, [201]), created: true } };
    } catch (err) {
      if (!(err instanceof OpenStackError && err.conflict)) throw err;
      const there = await g.image.find<GlanceImage>(`/images/${id}`);
      // A retried create (a crash, a lost answer): the same image, adopt it.
      if (
        there &&
        there[propDigest] === disk.manifestDigest &&
        sameDisk(there, disk) &&
        compatible(there, look.marker) &&
        (usable.has(there.status) || there.status === 'queued')
      )
        return { done: { image: await adopt(g, there, look.marker), created: false } };
      // Deleted (Glance keeps the id taken forever) or someone else's: the next id in the sequence.
    }
  }
  throw new KupenstackError(
    'image.ids-exhausted',
    `${maxIdAttempts} Glance images of ${disk.manifestDigest} were already created and deleted in this project; delete unused ones or pin another digest`,
  );
}

/** An unmarked version (made by `kupenstack image import`) gets the manifest's marker, so prune and retention know it. */
async function adopt(g: GlanceTarget, img: GlanceImage, marker: Marker | undefined): Promise<GlanceImage> {
  if (!marker || markerFromMetadata(img)) return img;
  const ops: PatchOp[] = Object.entries(markerMetadata(marker)).map(([k, v]) => ({ op: 'add', path: pointer(k), value: v }));
  ops.push({ op: 'replace', path: '/tags', value: [...new Set([...(img.tags ?? []), ownerTag(marker.owner)])] });
  g.log?.(`adopt   Glance image ${img.id} (${String(img[propDigest])}) made by kupenstack image import`);
  return (await patchImage(g.image, img.id, ops, g.signal)) as GlanceImage;
}

/**
 * Is this failure worth another download? Glance being busy or cut off, or
 * the registry unreachable, yes. Refusals (a wrong digest, format, an unsafe
 * disk) no, nor a truncated blob: the registry client has already spent its
 * own resume budget on it.
 */
function retryable(err: unknown): boolean {
  if (err instanceof OpenStackError) return err.transient;
  if (err instanceof KupenstackError) return err.code === 'oci.network';
  return true;
}

/**
 * Streams the disk into a queued image: `open()` → hold back the last chunk
 * → `PUT /images/{id}/file`, in constant memory. The OCI stream fails before
 * its end on any verification error, which cuts the PUT short: Glance keeps
 * the image `queued`, never `active` with wrong content. After the retry
 * budget (or at once for a refusal) the queued image is deleted.
 */
export async function uploadVersion(
  g: GlanceTarget,
  img: GlanceImage,
  disk: ResolvedDisk,
  source: DiskSource,
  onProgress?: (p: TransferProgress) => void,
): Promise<Looked<GlanceImage>> {
  if (img.status !== 'queued') throw new KupenstackError('image.data-immutable', `Glance image ${img.id} is ${img.status}: image data is written once`);
  let lastError: unknown;
  // Worth another attempt: decided after each failure, from what Glance holds now.
  let again = false;
  // The last failure was waiting on another worker's upload: that image is not ours to delete.
  let theirs = false;
  try {
    return await retry(
      async (): Promise<Looked<GlanceImage>> => {
        try {
          return { done: await uploadOnce(g, img, disk, source, onProgress) };
        } catch (err) {
          theirs = false;
          again = false;
          const now = await g.image.find<GlanceImage>(`/images/${img.id}`);
          // Glance refused or dropped our PUT while the image is (or became) another worker's upload: a 409 may reach
          // us as a broken connection while our body is still being sent. Not our data, so never ours to delete:
          // the winner's image is used (only this owner's workers write this id, each verifying before its last
          // chunk), or ours goes again if the winner failed. A failure of our own stream (a digest or format
          // refusal) is not this case: its image is deleted below whatever Glance says.
          if (err instanceof LostUploadRace || (err instanceof OpenStackError && now !== undefined && (inFlight.has(now.status) || usable.has(now.status)))) {
            theirs = true;
            const other = await awaitOtherUpload(g, img.id, disk.manifestDigest);
            theirs = false;
            // Requeue mode: the other worker's upload is looked at again by a later run.
            if (isWaiting(other)) return other;
            if (other.done) return { done: other.done };
            again = true;
            throw err;
          }
          // Should Glance ever have finished an upload we cut short, its content is not trusted: no retry, deleted below.
          again = now?.status === 'queued' && retryable(err);
          throw err;
        }
      },
      {
        retries: uploadAttempts - 1,
        baseMs: 500,
        maxMs: 5_000,
        retryable: () => again,
        onRetry: (err, attempt) =>
          g.log?.(
            `retry   upload of ${disk.manifestDigest} into ${img.id} (attempt ${attempt + 1} of ${uploadAttempts}) after: ${err instanceof Error ? err.message : String(err)}`,
          ),
        ...(g.signal ? { signal: g.signal } : {}),
      },
    );
  } catch (err) {
    lastError = err;
  }
  if (theirs) throw lastError;
  // Nothing unverified stays in Glance: the queued image goes (the next run starts over under the next id), even when
  // the run's own signal cut the upload (its deadline, util/bounds.ts).
  await deleteVersion({ ...g, signal: g.signal?.aborted ? undefined : g.signal }, img.id);
  const detail = lastError instanceof Error ? lastError.message : String(lastError);
  throw new KupenstackError(
    lastError instanceof KupenstackError && !(lastError instanceof OpenStackError) ? lastError.code : 'image.oci-upload',
    `the disk of ${disk.reference} was not stored in Glance (${detail}); the queued image ${img.id} was deleted`,
    { cause: lastError },
  );
}

async function uploadOnce(
  g: GlanceTarget,
  img: GlanceImage,
  disk: ResolvedDisk,
  source: DiskSource,
  onProgress?: (p: TransferProgress) => void,
): Promise<GlanceImage> {
  const controller = new AbortController();
  const signal = g.signal ? AbortSignal.any([g.signal, controller.signal]) : controller.signal;
  let opened: OpenedDisk | undefined;
  let sourceError: Error | undefined;
  try {
    // Raw wanted and the disk is not: staged and imported, so Glance's image_conversion makes it raw (raw-target.ts).
    const staged = (await uploadWayFor(g.image, String(img.disk_format), signal)).way === 'import';
    if (staged) await markSourceFormat(g.image, img, signal);
    opened = await source.open(disk, signal);
    const { stream } = opened;
    checkDeclaredFormat(String(img.disk_format), opened.sniffedFormat);
    const total = disk.diskSize ?? (disk.compression === undefined && disk.packaging !== 'containerdisk' ? disk.blob.size : undefined);
    const length = exactLength(disk);
    const from = opened;
    // With a Content-Length the chunk sizes do not reach Glance: no gathering, no copy.
    const counter = new HoldBackLast(
      onProgress ? (bytesSent) => onProgress({ bytesSent, bytesFromRegistry: from.bytesFromRegistry(), total }) : undefined,
      length === undefined ? uploadChunkBytes : 0,
    );
    stream.once('error', (err: Error) => (sourceError = err));
    // pipeline() forwards a source error into the counter, whose error aborts the PUT (chunked: no final chunk; with a length: bytes missing).
    const body = pipeline(stream, counter, () => undefined);
    try {
      await putImageData(g.image, img.id, body, { timeoutMs: uploadTimeoutMs, signal, length, to: staged ? 'stage' : 'file' });
    } catch (err) {
      // 409: Glance refused the queued → saving step (it is atomic), another worker's upload holds the image.
      if (!sourceError && err instanceof OpenStackError && err.status === 409) throw new LostUploadRace(`another worker is storing ${img.id}`, { cause: err });
      throw sourceError ?? err;
    }
    if (sourceError) throw sourceError;
    if (staged) {
      const imported = await importStagedVersion(g.image, img, counter.bytes, disk, signal);
      ociTransfers.uploads++;
      return imported;
    }
    const stored = await g.image.get<GlanceImage>(`/images/${img.id}`);
    if (stored.status !== 'active' || stored.size !== counter.bytes) {
      throw new KupenstackError(
        'image.oci-stored',
        `Glance image ${img.id} is ${stored.status} with ${String(stored.size)} bytes after an upload of ${counter.bytes}`,
      );
    }
    ociTransfers.uploads++;
    return stored;
  } catch (err) {
    controller.abort();
    opened?.stream.destroy();
    throw err;
  } finally {
    if (opened) ociTransfers.blobBytes += opened.bytesFromRegistry();
  }
}

/**
 * The disk's size when the stream is bound to be exactly that long: a plain
 * layer (its digest fixes its bytes) or a decompressed disk whose digest the
 * layer states (VerifyingStream refuses any other length). A size stated
 * without a digest is only shown as progress.
 */
function exactLength(disk: ResolvedDisk): number | undefined {
  if (disk.packaging === 'containerdisk') return undefined;
  if (disk.compression === undefined) return disk.blob.size;
  return disk.diskDigest !== undefined ? disk.diskSize : undefined;
}

/**
 * The tag moves to this version: the image name, shown, the `oci-tag:`
 * tag and the look the manifest wants. Added before the old version loses
 * them (demote), so the name is never without an image.
 */
export async function promote(g: GlanceTarget, img: GlanceImage, look: VersionLook): Promise<GlanceImage> {
  const ops: PatchOp[] = [
    { op: 'replace', path: '/name', value: look.name },
    { op: 'replace', path: '/os_hidden', value: false },
  ];
  if (look.visibility !== undefined && img.visibility !== look.visibility) ops.push({ op: 'replace', path: '/visibility', value: look.visibility });
  if (look.protected !== undefined && img.protected !== look.protected) ops.push({ op: 'replace', path: '/protected', value: look.protected });
  if (look.minDisk !== undefined && img.min_disk !== look.minDisk) ops.push({ op: 'replace', path: '/min_disk', value: look.minDisk });
  if (look.minRam !== undefined && img.min_ram !== look.minRam) ops.push({ op: 'replace', path: '/min_ram', value: look.minRam });
  for (const [k, v] of Object.entries(look.properties)) if (img[k] !== v) ops.push({ op: 'add', path: pointer(k), value: v });
  for (const k of [propSupersededBy, propSupersededAt]) if (k in img) ops.push({ op: 'remove', path: pointer(k) });
  ops.push({ op: 'add', path: pointer(propPromotedAt), value: new Date().toISOString() });
  const own = (img.tags ?? []).filter((t) => t.startsWith(ownerTagPrefix));
  ops.push({ op: 'replace', path: '/tags', value: [...new Set([...look.tags, ...own, ...(look.marker ? [ownerTag(look.marker.owner)] : [])])] });
  return (await patchImage(g.image, img.id, ops, g.signal)) as GlanceImage;
}

/** An older version: no OCI tag, renamed `name@sha256:…`, hidden. Never deleted here (servers and rebuilds use its id). */
export async function demote(g: GlanceTarget, img: GlanceImage, imageName: string, supersededBy: string): Promise<void> {
  const digest = typeof img[propDigest] === 'string' ? img[propDigest] : img.id;
  const ops: PatchOp[] = [
    { op: 'replace', path: '/name', value: versionName(imageName, digest) },
    { op: 'replace', path: '/os_hidden', value: true },
    { op: 'replace', path: '/tags', value: (img.tags ?? []).filter((t) => !t.startsWith(ociTagPrefix)) },
    { op: 'add', path: pointer(propSupersededBy), value: supersededBy },
    { op: 'add', path: pointer(propSupersededAt), value: new Date().toISOString() },
  ];
  if (propPromotedAt in img) ops.push({ op: 'remove', path: pointer(propPromotedAt) });
  await patchImage(g.image, img.id, ops, g.signal);
}

/** Image ids the project's servers boot from (volume-backed servers show none). */
export async function imagesInUse(g: GlanceTarget): Promise<Set<string>> {
  if (!g.compute) throw new KupenstackError('internal', 'retention needs the compute API to see which versions servers use');
  const servers = await g.compute.list<{ image?: { id?: string } | string }>('/servers/detail', 'servers', { project_id: g.projectId });
  return new Set(servers.map((s) => (typeof s.image === 'object' ? s.image.id : undefined)).filter((id): id is string => typeof id === 'string'));
}

/** `keep`: deletes old versions that are hidden, untagged, unprotected and used by no server. Returns the deleted ids. */
export async function applyRetention(g: GlanceTarget, versions: readonly GlanceImage[], currentId: string, keep: number): Promise<string[]> {
  if (versions.length <= keep) return [];
  const victims = retentionVictims(versions, currentId, keep, await imagesInUse(g));
  for (const v of victims) {
    g.log?.(`delete  old image version ${v.id} (${String(v.name)}): beyond keep ${keep}, hidden and unused`);
    await deleteVersion(g, v.id);
  }
  return victims.map((v) => v.id);
}

/** Deletes one version; a protected one is unprotected first (only images the caller owns come here). */
export async function deleteVersion(g: GlanceTarget, id: string): Promise<void> {
  await deleteImage(g.image, id, g.signal);
}
