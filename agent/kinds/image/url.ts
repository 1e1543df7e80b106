import { createHash } from 'node:crypto';
import { pipeline, Readable } from 'node:stream';
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
import { openstackName, pick, type AdapterContext, type Remote } from '../kit/adapter.ts';
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
  const gate = egressFor(ctx.namespace);
  await gate?.check(source.url);
  // Through the gate's dispatcher: the socket goes to the address judged, and each redirect is judged again when it connects.
  const res = await fetch(source.url, { signal: ctx.signal, ...(gate ? { dispatcher: gate.dispatcher } : {}) }).catch((err: unknown) => {
    throw egressRefusalIn(err) ?? err;
  });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new KupenstackError(
      'image.download',
      `GET ${source.url} answered ${res.status} ${res.statusText}; the image stays queued and the download is retried on the next run`,
    );
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
    await deleteImage(ctx.apis.image, remote.id, ctx.signal);
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
      await deleteImage(ctx.apis.image, remote.id, ctx.signal);
      throw verifier.mismatch;
    }
    throw err;
  }
}
