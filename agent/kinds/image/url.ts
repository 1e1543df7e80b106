import { createHash } from 'node:crypto';
import { PassThrough, pipeline, Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { fetch } from 'undici';
import { checkDeclaredFormat, sniffBytes, sniffDiskFormat } from '../../../lib/disk/sniff.ts';
import { HoldBackLast } from '../../../lib/stream/hold-back.ts';
import { peek } from '../../../lib/stream/peek.ts';
import { KupenstackError } from '../../errors.ts';
import { egressFor } from '../../net/egress.ts';
import { egressRefusalIn } from '../../net/egress-refused.ts';
import { deleteImage, patchImage, putImageData } from '../../glance/image-api.ts';
import type { Manifest } from '../../model/manifest.ts';
import { OpenStackError } from '../../openstack/errors.ts';
import { markerMetadata, ownerTag, type Marker } from '../../ownership/marker.ts';
import { uuid5 } from '../../util/uuid5.ts';
import { ThroughputGuard } from '../../../lib/stream/throughput.ts';
import { ByteLimit } from '../../../oci/sniff-gate.ts';
import { downloadBreach } from '../../glance/registry-source.ts';
import { BoundExceeded, boundExceededIn, bounds, formatSize } from '../../util/bounds.ts';
import { openstackName, pick, type AdapterContext, type Remote } from '../kit/adapter.ts';
import { checkImageRoom } from './room.ts';
import { sourceKey, sourceShaKey, toRemote, type RawImage } from './remote.ts';

/**
 * The Image kind with `source.url`: one Glance image, its data streamed from
 * the URL once. create() is one POST carrying the marker and the source URL
 * (`kupenstack_source`); the image is then `queued`, without data. Its
 * `digest` field is observed as the URL once Glance holds data (any status
 * but `queued`), null before; the update of `digest` streams the URL into
 * `PUT /images/{id}/file`. A Glance status, unlike a property written after
 * the upload, cannot disagree with the data that is really there.
 *
 * Ids are uuid5(project, manifest, source): a retried create answers 409 and
 * is adopted. Glance never frees the id of a deleted image, so after a
 * delete the next create walks on to `…#1`, `…#2`: still deterministic.
 */

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

export function urlDesired(m: Manifest): Record<string, unknown> {
  const spec = m.spec;
  const out: Record<string, unknown> = {
    name: openstackName(m),
    ...pick(spec, {
      diskFormat: 'disk_format',
      containerFormat: 'container_format',
      visibility: 'visibility',
      protected: 'protected',
      minDisk: 'min_disk',
      minRam: 'min_ram',
      properties: 'properties',
    }),
  };
  if (Array.isArray(spec.tags)) out.tags = [...(spec.tags as string[])].sort();
  const source = urlSource(m);
  if (source) {
    out.source = source;
    out.digest = source.url;
  }
  return out;
}

export async function urlCreate(ctx: AdapterContext, m: Manifest, desired: Record<string, unknown>, marker: Marker): Promise<Remote> {
  const source = urlSource(m);
  if (!source) throw new KupenstackError('image.no-source', 'an Image without spec.source can only be imported (spec.import)');
  // Judged before Glance holds anything for it: a refused URL leaves no queued image behind.
  await egressFor(ctx.namespace)?.check(source.url);
  await checkImageRoom(ctx, m.address);
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
  throw new KupenstackError(
    'image.ids-exhausted',
    `${maxIdAttempts} images of ${m.address} with this source were already created and deleted; change the source or rename the manifest`,
  );
}

/**
 * Hashes what flows through and keeps the latest chunk back until the end
 * (lib/stream/hold-back.ts): on a mismatch with `spec.source.url.sha256` the
 * stream fails before its last byte, so the upload is cut short and Glance
 * leaves the image `queued` instead of `active`.
 */
export class HoldBackSha256 extends HoldBackLast {
  readonly expected: string | undefined;
  private readonly hash = createHash('sha256');
  private hashed = 0;
  digest: string | undefined;
  mismatch: KupenstackError | undefined;

  constructor(expected: string | undefined) {
    super();
    this.expected = expected;
  }

  /** Every byte that came in and was hashed (the held-back chunk too). */
  override get bytes(): number {
    return this.hashed;
  }

  protected override inspect(chunk: Buffer): void {
    this.hash.update(chunk);
    this.hashed += chunk.length;
  }

  protected override check(): Error | undefined {
    this.digest = this.hash.digest('hex');
    if (this.expected && this.digest !== this.expected) {
      this.mismatch = new KupenstackError(
        'image.checksum',
        `the downloaded disk has sha256 ${this.digest}, not ${this.expected} as spec.source.url.sha256 says; the upload was refused`,
      );
      return this.mismatch;
    }
    return undefined;
  }
}

/**
 * Streams the URL into Glance with constant memory: download → sniff the
 * first 64 KiB → sha256 (last chunk held back) → PUT /file. A refused disk
 * (wrong checksum, format or an unsafe qcow2) leaves the image queued, then
 * deletes it: nothing unverified stays in Glance.
 */
export async function urlUpload(ctx: AdapterContext, remote: Remote, m: Manifest): Promise<void> {
  const source = urlSource(m);
  if (!source) throw new KupenstackError('image.no-source', 'nothing to upload: the manifest has no spec.source.url');
  if (remote.status !== 'queued') {
    throw new KupenstackError(
      'image.data-immutable',
      `Glance image ${remote.id} is ${String(remote.status)}: image data is written once; a new source makes a new image`,
    );
  }
  const body = await download(ctx, remote, source.url);
  const { head, stream } = await peek(body, sniffBytes).catch(async (err: unknown) => {
    // Too slow or too large before the first 64 KiB: refused as later, nothing partial left.
    const bound = boundExceededIn(err);
    if (bound) await discard(ctx, remote.id);
    throw bound ?? err;
  });
  let format: string;
  try {
    format = sniffDiskFormat(head);
    const declared = typeof m.spec.diskFormat === 'string' ? m.spec.diskFormat : undefined;
    if (declared) checkDeclaredFormat(declared, format);
  } catch (err) {
    // Never started, the combined stream would not close the download itself.
    body.destroy();
    stream.destroy();
    await deleteImage(ctx.apis.image, remote.id, ctx.signal);
    throw boundExceededIn(err) ?? err;
  }
  if (!remote.fields.disk_format) await patchImage(ctx.apis.image, remote.id, [{ op: 'replace', path: '/disk_format', value: format }], ctx.signal);
  const verifier = new HoldBackSha256(source.sha256);
  let sourceError: unknown;
  stream.once('error', (err: Error) => (sourceError = err));
  // pipeline() forwards a download error to the verifier, which aborts the PUT.
  const data = pipeline(stream, verifier, () => undefined);
  try {
    await putImageData(ctx.apis.image, remote.id, data, { timeoutMs: bounds().downloadDeadlineMs, signal: ctx.signal });
  } catch (err) {
    // Over a bound (too slow, too long, too large) as for a refused disk: nothing partial stays in Glance.
    const refused = verifier.mismatch ?? boundExceededIn(sourceError) ?? boundExceededIn(err);
    if (refused) {
      await discard(ctx, remote.id);
      throw refused;
    }
    throw err;
  }
}

/**
 * GET the URL through the egress gate, bounded (util/bounds.ts): the headers and the
 * whole body within the download deadline, the body at least at the minimum rate and
 * at most the image size. A refusal before any byte deletes the queued image.
 */
async function download(ctx: AdapterContext, remote: Remote, url: string): Promise<Readable> {
  const b = bounds();
  const gate = egressFor(ctx.namespace);
  await gate?.check(url);
  // The guard's clock runs from here: headers that never come break the rate or the deadline too, and abort the request.
  const stop = new AbortController();
  let breach: BoundExceeded | undefined;
  const guard = new ThroughputGuard(
    { minBytesPerSecond: b.downloadMinBytesPerSecond, windowMs: b.downloadRateWindowMs, deadlineMs: b.downloadDeadlineMs },
    (found) => {
      breach = downloadBreach(`GET ${url}`, found);
      stop.abort(breach);
      return breach;
    },
  );
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, stop.signal]) : stop.signal;
  const refuse = async (err: BoundExceeded): Promise<never> => {
    guard.destroy();
    await discard(ctx, remote.id);
    throw err;
  };
  // Through the gate's dispatcher: the socket goes to the address judged, and each redirect is judged again when it connects.
  const res = await fetch(url, { signal, ...(gate ? { dispatcher: gate.dispatcher } : {}) }).catch(async (err: unknown) => {
    const bound = breach ?? boundExceededIn(err);
    if (bound) return refuse(bound);
    throw egressRefusalIn(err) ?? err;
  });
  if (!res.ok || !res.body) {
    guard.destroy();
    await res.body?.cancel();
    throw new KupenstackError(
      'image.download',
      `GET ${url} answered ${res.status} ${res.statusText}; the image stays queued and the download is retried on the next run`,
    );
  }
  const length = Number(res.headers.get('content-length') ?? NaN);
  if (length > b.imageBytes) {
    await res.body.cancel();
    return refuse(imageTooLarge(url, formatSize(length)));
  }
  const limit = new ByteLimit(b.imageBytes, `GET ${url}`, () => imageTooLarge(url, `more than ${formatSize(b.imageBytes)}`));
  const out = new PassThrough();
  pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), guard, limit, out, (err) => {
    if (err && !out.destroyed) out.destroy(err);
  });
  return out;
}

/** The queued image of a refused download goes, even when the run's own deadline cut it (its signal is aborted then). */
function discard(ctx: AdapterContext, id: string): Promise<void> {
  return deleteImage(ctx.apis.image, id, ctx.signal?.aborted ? undefined : ctx.signal);
}

function imageTooLarge(url: string, size: string): BoundExceeded {
  return new BoundExceeded(
    'image-size',
    size,
    formatSize(bounds().imageBytes),
    `GET ${url}: the disk is over the cluster admin's limit per image; nothing was stored`,
  );
}
