import type { Platform } from './disk-source.ts';
import { sha256Of, verifyBuffer } from './digest.ts';
import { OciError } from './errors.ts';
import { header, type RegistryClient } from './client.ts';
import { isImageManifest, isIndex, manifestAccept, ociIndex, ociManifest } from './media-types.ts';
import { isValidDigest } from './reference.ts';

/** Manifests and indexes: typed parsing and digest-verified fetching. */

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  artifactType?: string;
  platform?: Platform;
  data?: string;
}

export interface ImageManifest {
  kind: 'manifest';
  mediaType: string;
  artifactType?: string;
  config: Descriptor;
  layers: Descriptor[];
  subject?: Descriptor;
  annotations: Record<string, string>;
}

export interface ImageIndex {
  kind: 'index';
  mediaType: string;
  artifactType?: string;
  manifests: Descriptor[];
  annotations: Record<string, string>;
}

export type Manifest = ImageManifest | ImageIndex;

export interface FetchedManifest {
  digest: string;
  /** The bytes as served (the digest is over them). */
  raw: Buffer;
  manifest: Manifest;
}

/** Manifests are small; anything larger is not one (distribution's own limit is 4 MiB). */
const maxManifestBytes = 4 * 1024 * 1024;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringMap(v: unknown, where: string): Record<string, string> {
  if (v === undefined) return {};
  if (!isRecord(v)) throw malformed(where, 'annotations must be an object of strings');
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(v)) {
    if (typeof value !== 'string') throw malformed(where, `annotation ${k} is not a string`);
    out[k] = value;
  }
  return out;
}

function malformed(where: string, why: string): OciError {
  return new OciError('oci.format', `${where} is not a valid OCI manifest: ${why}`);
}

function parseDescriptor(v: unknown, where: string): Descriptor {
  if (!isRecord(v)) throw malformed(where, 'a descriptor is not an object');
  const { mediaType, digest, size } = v;
  if (typeof mediaType !== 'string' || !mediaType) throw malformed(where, 'a descriptor has no mediaType');
  if (typeof digest !== 'string' || !isValidDigest(digest)) throw malformed(where, `a descriptor has an invalid digest ${JSON.stringify(digest)}`);
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw malformed(where, `descriptor ${digest} has an invalid size`);
  const d: Descriptor = { mediaType, digest, size };
  if (v.annotations !== undefined) d.annotations = stringMap(v.annotations, where);
  if (typeof v.artifactType === 'string') d.artifactType = v.artifactType;
  if (typeof v.data === 'string') d.data = v.data;
  if (isRecord(v.platform)) {
    const p = v.platform;
    if (typeof p.architecture === 'string') {
      d.platform = {
        architecture: p.architecture,
        ...(typeof p.os === 'string' ? { os: p.os } : {}),
        ...(typeof p.variant === 'string' ? { variant: p.variant } : {}),
      };
    }
  }
  return d;
}

/** Parses manifest bytes; the media type comes from the body, else from Content-Type. */
export function parseManifest(raw: Buffer, contentType: string | undefined, where: string): Manifest {
  let doc: unknown;
  try {
    doc = JSON.parse(raw.toString('utf8'));
  } catch {
    throw malformed(where, 'not JSON');
  }
  if (!isRecord(doc)) throw malformed(where, 'not a JSON object');
  if (doc.schemaVersion !== 2) throw malformed(where, `schemaVersion ${String(doc.schemaVersion)} (only 2 is supported)`);
  const declared = typeof doc.mediaType === 'string' ? doc.mediaType : undefined;
  const fromHeader = contentType?.split(';')[0]?.trim();
  let mediaType = declared ?? fromHeader ?? '';
  if (!isIndex(mediaType) && !isImageManifest(mediaType)) {
    // OCI allows mediaType to be absent: the shape decides.
    mediaType = Array.isArray(doc.manifests) ? ociIndex : ociManifest;
  }
  const annotations = stringMap(doc.annotations, where);
  const artifactType = typeof doc.artifactType === 'string' ? doc.artifactType : undefined;
  if (isIndex(mediaType)) {
    if (!Array.isArray(doc.manifests)) throw malformed(where, 'an index without manifests');
    return { kind: 'index', mediaType, ...(artifactType ? { artifactType } : {}), manifests: doc.manifests.map((m) => parseDescriptor(m, where)), annotations };
  }
  if (!Array.isArray(doc.layers)) throw malformed(where, 'no layers array');
  return {
    kind: 'manifest',
    mediaType,
    ...(artifactType ? { artifactType } : {}),
    config: parseDescriptor(doc.config, where),
    layers: doc.layers.map((l) => parseDescriptor(l, where)),
    ...(doc.subject !== undefined ? { subject: parseDescriptor(doc.subject, where) } : {}),
    annotations,
  };
}

export function manifestPath(repository: string, reference: string): string {
  return `/v2/${repository}/manifests/${reference}`;
}

export function pullScope(repository: string): string {
  return `repository:${repository}:pull`;
}

/**
 * GET a manifest by tag or digest with all four media types accepted. By
 * digest: the body must hash to it. By tag: the body's own digest is the
 * identity, and a `Docker-Content-Digest` header that disagrees is refused.
 */
export async function fetchManifest(client: RegistryClient, repository: string, reference: string, signal?: AbortSignal): Promise<FetchedManifest> {
  const res = await client.send('GET', manifestPath(repository, reference), { scopes: [pullScope(repository)], headers: { accept: manifestAccept }, signal });
  const length = Number(header(res, 'content-length') ?? '0');
  if (length > maxManifestBytes) {
    await res.body.dump();
    throw new OciError(
      'oci.too-large',
      `${client.registry}/${repository}:${reference}: the manifest is ${length} bytes (limit ${maxManifestBytes}); not a manifest KupenStack reads`,
    );
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxManifestBytes) {
      res.body.destroy();
      throw new OciError(
        'oci.too-large',
        `${client.registry}/${repository}:${reference}: the manifest is over ${maxManifestBytes} bytes; not a manifest KupenStack reads`,
      );
    }
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks);
  const where = `${client.registry}/${repository}${reference.includes(':') ? '@' : ':'}${reference}`;
  let digest: string;
  if (isValidDigest(reference)) {
    verifyBuffer(raw, reference, `the manifest ${where}`);
    digest = reference;
  } else {
    digest = sha256Of(raw);
    const claimed = header(res, 'docker-content-digest');
    if (claimed && claimed.startsWith('sha256:') && claimed !== digest) {
      throw new OciError(
        'oci.digest',
        `the manifest ${where} hashes to ${digest} but the registry says ${claimed}; refused (corrupted storage or a tampering proxy)`,
      );
    }
  }
  return { digest, raw, manifest: parseManifest(raw, header(res, 'content-type'), where) };
}

/** HEAD a manifest: its digest without the body (null when the tag or digest is unknown). */
export async function headManifest(
  client: RegistryClient,
  repository: string,
  reference: string,
  signal?: AbortSignal,
): Promise<{ digest: string; mediaType: string; size: number } | null> {
  const res = await client.send('HEAD', manifestPath(repository, reference), {
    scopes: [pullScope(repository)],
    headers: { accept: manifestAccept },
    signal,
    accept: (s) => (s >= 200 && s < 300) || s === 404,
  });
  await res.body.dump();
  if (res.status === 404) return null;
  const digest = header(res, 'docker-content-digest');
  if (!digest) return null;
  return { digest, mediaType: header(res, 'content-type') ?? '', size: Number(header(res, 'content-length') ?? '0') };
}
