import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { createGzip, createZstdCompress } from 'node:zlib';
import type { CredentialStore } from './auth/credentials.ts';
import { clientFor, type RegistryClient, type RegistryClientOptions } from './client.ts';
import { sha256Of } from './digest.ts';
import { OciError } from './errors.ts';
import { vmimage } from './formats/vmimage-annotations.ts';
import { createdAnnotation, diskMediaType, emptyDigest, ociEmpty, ociManifest, titleAnnotation, vmImageArtifact, type Compression } from './media-types.ts';
import { glanceArchitecture } from './platform.ts';
import { formatReference, parseReference, type Reference } from './reference.ts';
import { formatsAgree, qcow2VirtualSize, sniffBytes, sniffDiskFormat } from '../lib/disk/sniff.ts';
import { blobExists, putManifest, uploadBuffer, uploadStream } from './upload.ts';

/**
 * `kupenstack image push`: a disk file → our disk artifact (oci/README.md):
 * artifactType application/vnd.kupenstack.vmimage.v1, the empty config, one
 * application/vnd.diskimage.<format>[.gzip|.zstd] layer titled with the file
 * name, metadata in io.kupenstack.vmimage.* annotations. The same shape
 * `oras push --artifact-type …` makes, so `oras pull` and `skopeo copy` work.
 */

export interface PushOptions {
  osDistro?: string;
  osVersion?: string;
  osType?: string;
  /** Architecture (x86_64/amd64, aarch64/arm64, …); stored in Glance's spelling. */
  arch?: string;
  minDiskGb?: number;
  minRamMb?: number;
  /** Extra manifest annotations (k=v), e.g. io.kupenstack.vmimage.property.hw_disk_bus=virtio. */
  annotations?: Record<string, string>;
  /** Compress the layer (raw disks; qcow2 compresses internally and should not be). */
  compression?: Compression;
  insecure?: boolean;
  credentials?: CredentialStore;
  client?: Omit<RegistryClientOptions, 'registry' | 'insecure' | 'credentials'>;
  signal?: AbortSignal;
  /** Bytes read from the file so far (progress). */
  onProgress?: (bytes: number, total: number) => void;
  /** The created timestamp (tests pin it for reproducible digests). */
  created?: string;
}

export interface PushResult {
  /** registry/repository@manifest digest */
  reference: string;
  tag?: string;
  manifestDigest: string;
  layer: { digest: string; size: number; mediaType: string };
  diskFormat: string;
  /** Bytes sent to the registry (0 when the layer was already there). */
  uploaded: number;
  /** The index the tag names, when the artifact has one (a KubeVirt VM export always does). */
  indexDigest?: string;
}

export class Sha256Tap extends Transform {
  private readonly hash = createHash('sha256');
  private readonly onBytes: (n: number) => void;
  bytes = 0;

  constructor(onBytes: (n: number) => void) {
    super({ highWaterMark: 1 << 20 });
    this.onBytes = onBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    this.onBytes(chunk.length);
    callback(null, chunk);
  }

  digest(): string {
    return `sha256:${this.hash.digest('hex')}`;
  }
}

async function readHead(file: string): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(sniffBytes);
    const { bytesRead } = await fh.read(buf, 0, sniffBytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The hash pass reads into one reused buffer: hashing is synchronous, so nothing holds a chunk after it (no buffer per read for the collector). */
const hashReadBytes = 1 << 20;

async function sha256File(file: string, onBytes: (n: number) => void): Promise<string> {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafeSlow(hashReadBytes);
  const fh = await open(file, 'r');
  try {
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      onBytes(bytesRead);
    }
  } finally {
    await fh.close();
  }
  return `sha256:${hash.digest('hex')}`;
}

/** The artifact's manifest annotations: what the user passed over what the disk says; the format must stay the disk's. */
function diskAnnotations(format: string, virtualSize: number | undefined, options: PushOptions): Record<string, string> {
  const annotations: Record<string, string> = {
    [createdAnnotation]: options.created ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    [vmimage.diskFormat]: format,
  };
  if (virtualSize !== undefined) annotations[vmimage.virtualSize] = String(virtualSize);
  if (options.arch) annotations[vmimage.architecture] = glanceArchitecture(options.arch);
  if (options.osType) annotations[vmimage.osType] = options.osType;
  else if (options.osDistro) annotations[vmimage.osType] = options.osDistro === 'windows' ? 'windows' : 'linux';
  if (options.osDistro) annotations[vmimage.osDistro] = options.osDistro;
  if (options.osVersion) annotations[vmimage.osVersion] = options.osVersion;
  if (options.minDiskGb !== undefined) annotations[vmimage.minDisk] = String(options.minDiskGb);
  if (options.minRamMb !== undefined) annotations[vmimage.minRam] = String(options.minRamMb);
  Object.assign(annotations, options.annotations);
  if (annotations[vmimage.diskFormat] !== format) {
    throw new OciError(
      'oci.format-mismatch',
      `--annotation ${vmimage.diskFormat}=${annotations[vmimage.diskFormat]} contradicts the file, which is ${format}; leave it out`,
    );
  }
  return annotations;
}

/** The empty config and the manifest around one uploaded disk layer; returns the manifest digest. */
async function putDiskManifest(
  client: RegistryClient,
  target: Reference,
  layer: { mediaType: string; digest: string; size: number; annotations: Record<string, string> },
  annotations: Record<string, string>,
  signal: AbortSignal | undefined,
): Promise<string> {
  await uploadBuffer(client, target.repository, Buffer.from('{}'), signal);
  const manifest = {
    schemaVersion: 2,
    mediaType: ociManifest,
    artifactType: vmImageArtifact,
    config: { mediaType: ociEmpty, digest: emptyDigest, size: 2, data: 'e30=' },
    layers: [layer],
    annotations,
  };
  const raw = Buffer.from(JSON.stringify(manifest));
  const manifestDigest = await putManifest(client, target.repository, target.tag ?? target.digest ?? sha256Of(raw), raw, ociManifest, signal);
  if (target.digest && target.digest !== manifestDigest) {
    throw new OciError('oci.digest', `pushed ${manifestDigest}, not the digest ${target.digest} the reference names; push to a tag instead`);
  }
  return manifestDigest;
}

export interface StreamPushOptions extends PushOptions {
  /** The disk format the caller knows (Glance's disk_format); the first bytes must agree. */
  format: string;
  /** Bytes the stream will give (Glance's size), when known: a stream that ends early or late fails the push. */
  size?: number;
  /** The layer's title (org.opencontainers.image.title): the file name `oras pull` writes. */
  title: string;
}

/**
 * A disk that arrives as a stream (`kupenstack image export`: Glance's data)
 * → the same artifact pushDisk makes from a file, in one pass and constant
 * memory: the layer's digest is computed while it is sent, and the manifest
 * is written only after the whole stream arrived without error (a stream
 * that fails its own checks leaves at most an unreferenced blob).
 */
export async function pushDiskStream(source: Readable, ref: string, options: StreamPushOptions): Promise<PushResult> {
  const target = parseReference(ref);
  const client = clientFor(target.registry, options);
  const check = new DiskHeadCheck(options.format, formatReference(target));
  source.on('error', (e) => check.destroy(e));
  let read = 0;
  const total = options.size ?? 0;
  const sent = await uploadStream(client, target.repository, source.pipe(check), {
    ...(options.signal ? { signal: options.signal } : {}),
    onBytes: (n) => {
      read += n;
      options.onProgress?.(read, total);
    },
  });
  if (options.size !== undefined && sent.size !== options.size)
    throw new OciError('oci.truncated', `the disk for ${formatReference(target)} gave ${sent.size} bytes, its source says ${options.size}; nothing was tagged`);
  const format = check.format!;
  const mediaType = diskMediaType(format);
  const virtualSize = format === 'qcow2' ? qcow2VirtualSize(check.head) : format === 'raw' ? sent.size : undefined;
  const layer = { mediaType, digest: sent.digest, size: sent.size, annotations: { [titleAnnotation]: options.title } };
  const manifestDigest = await putDiskManifest(client, target, layer, diskAnnotations(format, virtualSize, options), options.signal);
  return {
    reference: formatReference({ registry: target.registry, repository: target.repository, digest: manifestDigest }),
    ...(target.tag ? { tag: target.tag } : {}),
    manifestDigest,
    layer: { digest: sent.digest, size: sent.size, mediaType },
    diskFormat: format,
    uploaded: sent.size,
  };
}

/**
 * Passes a disk stream through unchanged and checks its first 64 KiB the way
 * a pull does (no qcow2 reading outside itself, the format it is said to
 * be): a failure errors the stream, so the upload is never completed.
 */
export class DiskHeadCheck extends Transform {
  head = Buffer.alloc(0);
  format: string | undefined;
  private readonly declared: string;
  private readonly where: string;

  constructor(declared: string, where: string) {
    super({ highWaterMark: 1 << 20 });
    this.declared = declared;
    this.where = where;
  }

  private decide(): Error | undefined {
    try {
      const sniffed = sniffDiskFormat(this.head);
      if (!formatsAgree(this.declared, sniffed))
        return new OciError(
          'oci.format-mismatch',
          `the disk for ${this.where} is said to be ${this.declared} but its bytes are ${sniffed}; nothing was tagged`,
        );
      this.format = sniffed;
      return undefined;
    } catch (err) {
      return err as Error;
    }
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.format === undefined && this.head.length < sniffBytes) {
      this.head = Buffer.concat([this.head, chunk.subarray(0, sniffBytes - this.head.length)]);
      if (this.head.length >= sniffBytes) {
        const err = this.decide();
        if (err) return callback(err);
      }
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    callback(this.format === undefined ? this.decide() : undefined);
  }
}

export async function pushDisk(file: string, ref: string, options: PushOptions = {}): Promise<PushResult> {
  const target = parseReference(ref);
  const size = await regularFileSize(file);
  const head = await readHead(file);
  // The same checks a pull makes: no compressed input, no qcow2 pointing outside itself.
  const format = sniffDiskFormat(head);
  const virtualSize = format === 'qcow2' ? qcow2VirtualSize(head) : format === 'raw' ? size : undefined;
  const client = clientFor(target.registry, options);
  const { repository } = target;
  const signal = options.signal;
  let read = 0;
  const total = options.compression ? size : size * 2; // uncompressed: hashed once, then (maybe) sent
  const progress = (n: number): void => {
    read += n;
    options.onProgress?.(read, total);
  };

  const compression = options.compression;
  const mediaType = diskMediaType(format, compression);
  const title = basename(file) + (compression === 'gzip' ? '.gz' : compression === 'zstd' ? '.zst' : '');
  const layerAnnotations: Record<string, string> = { [titleAnnotation]: title };
  const upload: LayerUpload = { client, repository, signal, file, size, progress };
  const layer = compression ? await pushCompressed(upload, compression, layerAnnotations) : await pushRaw(upload, () => options.onProgress?.(total, total));
  const { digest: layerDigest, size: layerSize, uploaded } = layer;

  const annotations = diskAnnotations(format, virtualSize, options);
  const manifestDigest = await putDiskManifest(
    client,
    target,
    { mediaType, digest: layerDigest, size: layerSize, annotations: layerAnnotations },
    annotations,
    signal,
  );
  return {
    reference: formatReference({ registry: target.registry, repository, digest: manifestDigest }),
    ...(target.tag ? { tag: target.tag } : {}),
    manifestDigest,
    layer: { digest: layerDigest, size: layerSize, mediaType },
    diskFormat: format,
    uploaded,
  };
}

/** The size of the file to push; anything but a readable regular file is refused. */
async function regularFileSize(file: string): Promise<number> {
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new OciError('oci.reference', `${file} is not a regular file`);
    return st.size;
  } catch (err) {
    if (err instanceof OciError) throw err;
    throw new OciError('oci.reference', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
  }
}

/** One disk file on its way to a repository as a layer blob. */
interface LayerUpload {
  client: RegistryClient;
  repository: string;
  signal: AbortSignal | undefined;
  file: string;
  size: number;
  progress: (n: number) => void;
}

/** The layer as it is in the registry: its digest and size, and the bytes this push sent (0 when the blob was there). */
interface PushedLayer {
  digest: string;
  size: number;
  uploaded: number;
}

/** Uncompressed: hashed first, so a blob the registry has is not sent again; the file must not change between the hash and the upload. */
async function pushRaw(u: LayerUpload, alreadyThere: () => void): Promise<PushedLayer> {
  const { client, repository, signal, file, size } = u;
  const digest = await sha256File(file, u.progress);
  if (await blobExists(client, repository, digest, signal)) {
    alreadyThere();
    return { digest, size, uploaded: 0 };
  }
  const changed = (detail: string, cause?: unknown): OciError =>
    new OciError(
      'oci.digest',
      `${file} changed while it was pushed (hashed ${digest}, ${detail}); push it again when it is not being written`,
      cause === undefined ? undefined : { cause },
    );
  // Hashed once (above): the registry checks the bytes it got against the digest and refuses others.
  let sent: { digest: string; size: number };
  try {
    sent = await uploadStream(client, repository, createReadStream(file, { highWaterMark: 1 << 20 }), {
      ...(signal ? { signal } : {}),
      onBytes: u.progress,
      digest,
    });
  } catch (err) {
    if (err instanceof OciError && /DIGEST_INVALID/.test(err.message)) throw changed('the registry found other bytes', err);
    throw err;
  }
  if (sent.size !== size) throw changed(`sent ${sent.size} of ${size} bytes`);
  return { digest, size, uploaded: sent.size };
}

/** Compressed on the way (one pass): the registry names the digest; the uncompressed size and digest go into the layer's annotations. */
async function pushCompressed(u: LayerUpload, compression: Compression, layerAnnotations: Record<string, string>): Promise<PushedLayer> {
  const tap = new Sha256Tap(u.progress);
  const source: Readable = createReadStream(u.file, { highWaterMark: 1 << 20 });
  const compressor = compression === 'gzip' ? createGzip({ level: 6 }) : createZstdCompress();
  source.on('error', (e) => tap.destroy(e));
  tap.on('error', (e) => compressor.destroy(e));
  source.pipe(tap).pipe(compressor);
  const sent = await uploadStream(u.client, u.repository, compressor, u.signal ? { signal: u.signal } : {});
  if (tap.bytes !== u.size) throw new OciError('oci.digest', `${u.file} changed size while it was pushed; push it again`);
  layerAnnotations[vmimage.uncompressedSize] = String(u.size);
  layerAnnotations[vmimage.uncompressedDigest] = tap.digest();
  return { digest: sent.digest, size: sent.size, uploaded: sent.size };
}
