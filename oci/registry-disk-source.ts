import { pipeline, Readable, type Duplex } from 'node:stream';
import { createGunzip, createZstdDecompress } from 'node:zlib';
import semver from 'semver';
import type { CredentialStore } from './auth/credentials.ts';
import { openBlob, readBlobHead } from './blob.ts';
import { RegistryClient, type RegistryClientOptions } from './client.ts';
import { verifyCosign } from './cosign-verify.ts';
import type { AttestationRequirement, VerifiedAttestation } from './attestation-policy.ts';
import { verifyAttestations } from './attestation-verify.ts';
import type { SignaturePolicy, VerifiedSignature } from './signature-policy.ts';
import { HoldBackLast } from '../lib/stream/hold-back.ts';
import { chooseSemverTag } from '../lib/semver-tag.ts';
import { VerifyingStream } from './digest.ts';
import type { DiskRequest, DiskSource, OpenedDisk, Platform, ResolvedDisk } from './disk-source.ts';
import { OciError } from './errors.ts';
import { diskFromTar, type TarDiskState } from './formats/containerdisk.ts';
import { detectDisk, type DetectedDisk } from './formats/detect.ts';
import { ExactSize } from './exact-size.ts';
import { glanceMetadata, vmimage } from './formats/vmimage-annotations.ts';
import { fetchManifest, type Descriptor, type FetchedManifest } from './manifest.ts';
import { tarLayerCompression, type Compression } from './media-types.ts';
import { defaultPlatform, ociArchitecture, selectPlatform } from './platform.ts';
import { isValidDigest, isValidTag, parseRepository } from './reference.ts';
import { formatsAgree, sniffBytes, sniffDiskFormat } from '../lib/disk/sniff.ts';
import { ByteLimit, SniffGate } from './sniff-gate.ts';
import { ThroughputGuard, type ThroughputBreach, type ThroughputLimits } from '../lib/stream/throughput.ts';
import { listTags } from './tags.ts';

/**
 * The registry side of the OCI pipeline (oci/disk-source.ts): a reference →
 * one manifest, detected and pre-flighted (resolve), → the disk's bytes,
 * verified, decompressed, untarred and sniffed as they flow (open).
 */

export interface RegistryDiskSourceOptions {
  credentials?: CredentialStore;
  /** Largest disk accepted, decompressed (bytes). Default 1 TiB (Glance's image_size_cap default). */
  maxDiskBytes?: number;
  /** The error of a disk over maxDiskBytes (the caller's words for its bound); default an `oci.too-large` OciError. */
  tooLarge?: (where: string, bytes: number | undefined, limit: number) => Error;
  /** Every blob download's slowest rate and longest time (lib/stream/throughput.ts), with the caller's error for a breach. */
  throughput?: { limits: ThroughputLimits; fail: (where: string, breach: ThroughputBreach) => Error };
  /** Resumptions of a broken blob download. Default 5. */
  retries?: number;
  /** Per-registry client settings (CA file, timeouts, dispatcher). */
  client?: Omit<RegistryClientOptions, 'registry' | 'insecure' | 'credentials'>;
}

const defaultMaxDiskBytes = 1024 ** 4;
const maxConfigBytes = 1024 * 1024;
/** Sniffed formats remembered per source: a few bytes each, enough for every version a fleet follows. */
const sniffCacheSize = 4096;

/**
 * The decompressor's output buffer. zlib's default (16 KiB) cuts a disk into
 * ~37 000 chunks per 512 MiB, each a Buffer every later stage handles and the
 * collector frees: measured on a 512 MiB zstd pull with the agent's flags,
 * 102 MiB/s and 3.5 CPU-s user at 16 KiB, 232 MiB/s and 1.8 at 256 KiB (1 MiB
 * adds ~5 %, for four times the memory per chunk in flight).
 */
const decompressedChunkBytes = 256 * 1024;

function decompressor(compression: Compression | 'none' | undefined): Duplex | undefined {
  if (compression === 'gzip') return createGunzip({ chunkSize: decompressedChunkBytes });
  if (compression === 'zstd') return createZstdDecompress({ chunkSize: decompressedChunkBytes });
  return undefined;
}

export class RegistryDiskSource implements DiskSource {
  private readonly options: RegistryDiskSourceOptions;
  private readonly clients = new Map<string, RegistryClient>();
  /**
   * What the first bytes of a disk showed, by the digests that fix those
   * bytes (content addressing: the same digests are the same bytes), so a
   * poll of a tag that did not move reads no blob. Only successful sniffs are
   * kept; open() still checks every byte it hands out.
   */
  private readonly sniffed = new Map<string, string>();

  constructor(options: RegistryDiskSourceOptions = {}) {
    this.options = options;
  }

  /** One client per registry (and scheme): tokens are cached per client. */
  client(registry: string, insecure: boolean): RegistryClient {
    const key = `${insecure ? 'http' : 'https'}://${registry}`;
    let c = this.clients.get(key);
    if (!c) {
      c = new RegistryClient({ ...this.options.client, registry, insecure, ...(this.options.credentials ? { credentials: this.options.credentials } : {}) });
      this.clients.set(key, c);
    }
    return c;
  }

  /** Bytes read from every registry by this source so far. */
  bytesRead(): number {
    let n = 0;
    for (const c of this.clients.values()) n += c.bytesRead;
    return n;
  }

  /** Requests sent to every registry by this source so far, and how many of them were for blobs. */
  requests(): { all: number; blobs: number } {
    let all = 0;
    let blobs = 0;
    for (const c of this.clients.values()) {
      all += c.requests;
      blobs += c.blobRequests;
    }
    return { all, blobs };
  }

  private remember(key: string, format: string): void {
    this.sniffed.delete(key);
    this.sniffed.set(key, format);
    // Oldest first out: a Map iterates in insertion order, and a hit is re-inserted below.
    while (this.sniffed.size > sniffCacheSize) this.sniffed.delete(this.sniffed.keys().next().value!);
  }

  private recall(key: string): string | undefined {
    const format = this.sniffed.get(key);
    if (format !== undefined) this.remember(key, format);
    return format;
  }

  async resolve(request: DiskRequest, signal?: AbortSignal): Promise<ResolvedDisk> {
    const { registry, repository } = parseRepository(request.repository);
    const insecure = request.insecure === true;
    const client = this.client(registry, insecure);
    const chosen = [request.tag, request.semver, request.digest].filter((x) => x !== undefined).length;
    if (chosen === 0) throw new OciError('oci.reference', `${request.repository}: give a tag, a semver range or a digest`);
    let tag: string | undefined;
    let reference: string;
    if (request.digest !== undefined) {
      // A pinned digest wins over a tag or range given alongside it.
      if (!isValidDigest(request.digest)) throw new OciError('oci.reference', `"${request.digest}" is not a digest; write sha256:<64 hex>`);
      reference = request.digest;
    } else if (request.semver !== undefined) {
      tag = await this.highestTag(client, repository, request.semver, signal);
      reference = tag;
    } else {
      if (!isValidTag(request.tag!)) throw new OciError('oci.reference', `"${request.tag}" is not a valid tag`);
      tag = request.tag!;
      reference = tag;
    }
    const where = `${registry}/${repository}${request.digest ? `@${request.digest}` : `:${tag}`}`;
    let top = await fetchManifest(client, repository, reference, signal);
    let indexDigest: string | undefined;
    let platform: Platform | undefined = request.platform;
    if (top.manifest.kind === 'index') {
      indexDigest = top.digest;
      const wanted = request.platform ?? defaultPlatform;
      const entry = selectPlatform(top.manifest, wanted, where);
      platform = entry.platform ?? wanted;
      const child: FetchedManifest = await fetchManifest(client, repository, entry.digest, signal);
      if (child.manifest.kind === 'index')
        throw new OciError('oci.format', `${where}: the index entry for the platform is itself an index; nested indexes are not supported`);
      top = child;
    }
    const manifest = top.manifest;
    if (manifest.kind !== 'manifest') throw new OciError('oci.format', `${where} is not an image manifest`);
    const detected = detectDisk(manifest, where, request.disk);
    if (detected.packaging === 'containerdisk')
      await this.checkContainerConfig(client, repository, manifest.config, request.platform ?? platform, where, signal);
    const meta = glanceMetadata(manifest.annotations, platform?.architecture);
    if (meta.declaredFormat !== undefined && detected.declaredFormat !== undefined && meta.declaredFormat !== detected.declaredFormat) {
      throw new OciError(
        'oci.format-mismatch',
        `${where}: ${vmimage.diskFormat} says ${meta.declaredFormat} but the layer says ${detected.declaredFormat}; make them agree`,
      );
    }
    const layer = detected.layer;
    const resolved: ResolvedDisk = {
      reference: `${registry}/${repository}@${top.digest}`,
      repository: `${registry}/${repository}`,
      ...(tag !== undefined && request.digest === undefined ? { tag } : {}),
      manifestDigest: top.digest,
      ...(indexDigest ? { indexDigest } : {}),
      packaging: detected.packaging,
      diskFormat: detected.declaredFormat ?? meta.declaredFormat ?? '',
      ...(detected.compression ? { compression: detected.compression } : {}),
      blob: { digest: layer.digest, size: layer.size, mediaType: layer.mediaType },
      annotations: manifest.annotations,
      properties: meta.properties,
      ...(meta.minDisk !== undefined ? { minDisk: meta.minDisk } : {}),
      ...(meta.minRam !== undefined ? { minRam: meta.minRam } : {}),
      ...(meta.virtualSize !== undefined ? { virtualSize: meta.virtualSize } : {}),
      ...(insecure ? { insecure } : {}),
      ...(platform ? { platform } : {}),
      formatDeclared: detected.declaredFormat !== undefined || meta.declaredFormat !== undefined,
      ...(meta.ignored.length > 0 ? { warnings: meta.ignored.map((k) => `annotation ${k} is not an allowed Glance property; ignored`) } : {}),
    };
    if (detected.tarLayers) resolved.layers = detected.tarLayers.map((l) => ({ digest: l.digest, size: l.size, mediaType: l.mediaType }));
    const diskSize = statedDiskSize(detected);
    if (diskSize !== undefined) resolved.diskSize = diskSize;
    // Only a named disk is part of the version's identity: an export's one disk unnamed is the manifest's disk.
    if (detected.kubevirt && request.disk !== undefined) resolved.diskName = detected.kubevirt.name;
    const uncompressedDigest = layer.annotations?.[vmimage.uncompressedDigest];
    if (uncompressedDigest && isValidDigest(uncompressedDigest)) resolved.diskDigest = uncompressedDigest;
    const limit = this.options.maxDiskBytes ?? defaultMaxDiskBytes;
    if (resolved.diskSize !== undefined && resolved.diskSize > limit) {
      if (this.options.tooLarge) throw this.options.tooLarge(where, resolved.diskSize, limit);
      throw new OciError('oci.too-large', `${where}: the disk is ${resolved.diskSize} bytes, over the limit of ${limit}; refused before downloading`);
    }
    await this.preflight(client, repository, resolved, where, signal);
    return resolved;
  }

  async verifySignature(disk: ResolvedDisk, policy: SignaturePolicy, signal?: AbortSignal): Promise<VerifiedSignature> {
    const { registry, repository } = parseRepository(disk.repository);
    const digests = [disk.manifestDigest, ...(disk.indexDigest ? [disk.indexDigest] : [])];
    const named = disk.tag !== undefined ? `${disk.repository}:${disk.tag}@${disk.manifestDigest}` : disk.reference;
    return verifyCosign(this.client(registry, disk.insecure === true), repository, named, digests, policy, signal);
  }

  async verifyAttestations(disk: ResolvedDisk, requirements: AttestationRequirement[], signal?: AbortSignal): Promise<VerifiedAttestation[]> {
    const { registry, repository } = parseRepository(disk.repository);
    const digests = [disk.manifestDigest, ...(disk.indexDigest ? [disk.indexDigest] : [])];
    const named = disk.tag !== undefined ? `${disk.repository}:${disk.tag}@${disk.manifestDigest}` : disk.reference;
    return verifyAttestations(this.client(registry, disk.insecure === true), repository, named, digests, requirements, signal);
  }

  /**
   * A containerDisk's image config: its architecture must be the one asked
   * for (a single-arch image of another architecture would boot nowhere),
   * and bootable-container (bootc/ostree) images are not disks.
   */
  private async checkContainerConfig(
    client: RegistryClient,
    repository: string,
    config: Descriptor,
    wanted: Platform | undefined,
    where: string,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    if (config.size > maxConfigBytes) throw new OciError('oci.too-large', `${where}: the image config is ${config.size} bytes (limit ${maxConfigBytes})`);
    const chunks: Buffer[] = [];
    for await (const c of openBlob(client, repository, config, { signal }) as AsyncIterable<Buffer>) chunks.push(c);
    let doc: { architecture?: unknown; config?: { Labels?: Record<string, unknown> | null } };
    try {
      doc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof doc;
    } catch {
      throw new OciError('oci.format', `${where}: the image config is not JSON`);
    }
    const labels = doc.config?.Labels ?? {};
    if (labels['containers.bootc'] === '1' || labels['ostree.bootable'] === '1' || labels['ostree.bootable'] === 'true') {
      throw new OciError(
        'oci.format',
        `${where} is a bootable container (bootc/ostree), not a containerDisk; build a disk image from it (bootc-image-builder) and push that`,
      );
    }
    const wantedArch = ociArchitecture((wanted ?? defaultPlatform).architecture);
    if (typeof doc.architecture === 'string' && ociArchitecture(doc.architecture) !== wantedArch) {
      throw new OciError(
        'oci.platform',
        `${where} is a containerDisk for ${doc.architecture}, not ${wantedArch}; ask for platform ${doc.architecture} or use an image built for ${wantedArch}`,
      );
    }
  }

  /** Highest tag satisfying a semver range: the Git source's rule (lib/semver-tag.ts). */
  private async highestTag(client: RegistryClient, repository: string, range: string, signal: AbortSignal | undefined): Promise<string> {
    if (semver.validRange(range) === null) throw new OciError('oci.reference', `"${range}" is not a semver range (e.g. ^1.2, ~0.6.0, >=1 <2)`);
    const tags = await listTags(client, repository, signal);
    const best = chooseSemverTag(tags, range);
    if (best === undefined) {
      throw new OciError(
        'oci.not-found',
        `${client.registry}/${repository} has no tag matching ${range} (${tags.filter((t) => semver.valid(t) !== null).length} semver tags of ${tags.length})`,
      );
    }
    return best;
  }

  /**
   * Before anything is created in Glance: an uncompressed disk layer's first
   * 64 KiB (one Range request) are sniffed, so a wrong format or an unsafe
   * qcow2 fails resolve. When only the bytes can tell the format
   * (containerDisk, `disk.img`), the start of the stream is read for it.
   */
  private async preflight(client: RegistryClient, repository: string, disk: ResolvedDisk, where: string, signal: AbortSignal | undefined): Promise<void> {
    if (disk.packaging !== 'containerdisk' && !disk.compression) {
      // The blob digest fixes the bytes sniffed.
      const key = `blob:${disk.blob.digest}`;
      let sniffed = this.recall(key);
      if (sniffed === undefined) {
        const head = await readBlobHead(client, repository, disk.blob.digest, sniffBytes, signal);
        sniffed = sniffDiskFormat(head);
        this.remember(key, sniffed);
      }
      if (disk.formatDeclared && !formatsAgree(disk.diskFormat, sniffed)) {
        throw new OciError(
          'oci.format-mismatch',
          `${where}: the manifest declares a ${disk.diskFormat} disk but its bytes are ${sniffed}; fix the layer media type (application/vnd.diskimage.${sniffed}) or push the right file`,
        );
      }
      if (!disk.formatDeclared) disk.diskFormat = sniffed;
      return;
    }
    if (disk.formatDeclared) return;
    // Compressed or tar layers: the manifest digest fixes every layer, hence the disk inside.
    const key = `manifest:${disk.manifestDigest}`;
    const known = this.recall(key);
    if (known !== undefined) {
      disk.diskFormat = known;
      return;
    }
    const opened = await this.open(disk, signal);
    opened.stream.destroy();
    disk.diskFormat = opened.sniffedFormat;
    this.remember(key, opened.sniffedFormat);
  }

  async open(disk: ResolvedDisk, signal?: AbortSignal): Promise<OpenedDisk> {
    const { registry, repository } = parseRepository(disk.repository);
    const client = this.client(registry, disk.insecure === true);
    const where = disk.reference;
    let fromRegistry = 0;
    const blobOptions = {
      signal,
      onBytes: (n: number) => (fromRegistry += n),
      ...(this.options.retries !== undefined ? { retries: this.options.retries } : {}),
    };
    const limit = this.options.maxDiskBytes ?? defaultMaxDiskBytes;
    const stages: Duplex[] = [];
    let source: Readable;
    if (disk.packaging === 'containerdisk') {
      const layers = disk.layers ?? [disk.blob];
      source = Readable.from(containerDiskChunks(client, repository, layers, blobOptions, where), { objectMode: false });
    } else {
      source = openBlob(client, repository, disk.blob, blobOptions);
      const d = decompressor(disk.compression);
      if (d) stages.push(d);
      if (disk.diskDigest) stages.push(new VerifyingStream(disk.diskDigest, `${where}: the decompressed disk`, disk.diskSize));
      // KubeVirt states a size and no digest: the layer digest covers the compressed bytes, this the length of what they give.
      else if (disk.packaging === 'kubevirt-export' && disk.diskSize !== undefined)
        stages.push(new ExactSize(disk.diskSize, `${where}: the KubeVirt disk ${disk.blob.digest} decompressed`));
    }
    const gate = new SniffGate(disk.formatDeclared === false ? undefined : disk.diskFormat || undefined, where);
    const out = new HoldBackLast(undefined, 0, { highWaterMark: 1 << 20 });
    // A plain layer (its reader stops at the descriptor's size) or a digest-checked decompressed disk (VerifyingStream
    // stops at diskSize) cannot outgrow a size already checked against the limit: no stage counting bytes again.
    const bounded =
      disk.packaging !== 'containerdisk' && (!disk.compression || disk.diskDigest !== undefined) && disk.diskSize !== undefined && disk.diskSize <= limit;
    const { throughput, tooLarge } = this.options;
    const guard = throughput ? [new ThroughputGuard(throughput.limits, (breach) => throughput.fail(where, breach))] : [];
    const byteLimit = bounded ? [] : [new ByteLimit(limit, where, tooLarge && ((bytes) => tooLarge(where, bytes, limit)))];
    const streams = [source, ...guard, ...stages, ...byteLimit, gate, out] as const;
    pipeline(streams as unknown as [Readable, ...Duplex[]], (err) => {
      if (err && !out.destroyed) out.destroy(toOciError(err, where));
    });
    const sniffedFormat = await gate.format.catch((err: unknown) => {
      out.destroy();
      throw toOciError(err, where);
    });
    if (disk.formatDeclared === false && disk.diskFormat && disk.diskFormat !== sniffedFormat) {
      out.destroy();
      throw new OciError('oci.format-mismatch', `${where}: the disk's bytes now show ${sniffedFormat}, resolve saw ${disk.diskFormat}; resolve again`);
    }
    return { stream: out, sniffedFormat, bytesFromRegistry: () => fromRegistry };
  }
}

/** The decompressed disk's size as the manifest states it: a plain layer's own size, KubeVirt's io.kubevirt.disk.size, or our uncompressed-size annotation. */
function statedDiskSize(detected: DetectedDisk): number | undefined {
  const { layer } = detected;
  if (!detected.compression && detected.packaging !== 'containerdisk') return layer.size;
  if (detected.kubevirt) return detected.kubevirt.size;
  const uncompressedSize = layer.annotations?.[vmimage.uncompressedSize];
  return uncompressedSize && /^\d+$/.test(uncompressedSize) ? Number(uncompressedSize) : undefined;
}

/** zlib and tar errors become typed (truncated/corrupt compressed data). */
function toOciError(err: unknown, where: string): Error {
  if (err instanceof OciError) return err;
  if (err instanceof Error && 'code' in err && typeof err.code === 'string' && err.code.startsWith('image.')) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/unexpected end|premature close|truncated/i.test(message)) {
    return new OciError('oci.truncated', `${where}: the disk stream ended early (${message}); nothing was used`, { cause: err });
  }
  if (err instanceof Error && 'code' in err && typeof err.code === 'string' && err.code.startsWith('Z_')) {
    return new OciError('oci.format', `${where}: the compressed layer is corrupt (${message}); refused`, { cause: err });
  }
  return new OciError('oci.registry', `${where}: ${message}`, { cause: err });
}

async function* containerDiskChunks(
  client: RegistryClient,
  repository: string,
  layers: Array<{ digest: string; size: number; mediaType: string }>,
  blobOptions: { signal: AbortSignal | undefined; onBytes: (n: number) => void; retries?: number },
  where: string,
): AsyncGenerator<Buffer> {
  for (const layer of layers) {
    const state: TarDiskState = {};
    const blob = openBlob(client, repository, layer, blobOptions);
    yield* diskFromTar(blob, decompressor(tarLayerCompression(layer.mediaType)), `${where} layer ${layer.digest}`, state);
    if (state.entry !== undefined) return;
  }
  throw new OciError(
    'oci.format',
    `${where} is a container image without a disk/<file> entry in any layer; a KubeVirt containerDisk has its disk at /disk/<name>`,
  );
}
