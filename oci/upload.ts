import { createHash, type Hash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { header, type RegistryClient } from './client.ts';
import { sha256Of } from './digest.ts';
import { OciError } from './errors.ts';
import { blobPath } from './blob.ts';
import { manifestPath } from './manifest.ts';

/**
 * Writing to a registry: blobs through an upload session (distribution 2.8
 * has no single-POST upload: POST → 202 + Location, then PUT, or PATCH with
 * the streamed body and an empty closing PUT), and manifests.
 */

function pushScopes(repository: string): string[] {
  return [`repository:${repository}:pull,push`];
}

/** Counts what flows to the registry, and hashes it unless the caller knows the digest already. */
class UploadCounter extends Transform {
  private readonly hash: Hash | undefined;
  private readonly onBytes: ((n: number) => void) | undefined;
  bytes = 0;

  constructor(hash: boolean, onBytes?: (n: number) => void) {
    super({ highWaterMark: 1 << 20 });
    this.hash = hash ? createHash('sha256') : undefined;
    this.onBytes = onBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    this.onBytes?.(chunk.length);
    this.hash?.update(chunk);
    callback(null, chunk);
  }

  digest(): string {
    if (!this.hash) throw new OciError('oci.digest', 'internal: an upload without hashing has no digest of its own');
    return `sha256:${this.hash.digest('hex')}`;
  }
}

export async function blobExists(client: RegistryClient, repository: string, digest: string, signal?: AbortSignal): Promise<boolean> {
  const res = await client.send('HEAD', blobPath(repository, digest), { scopes: pushScopes(repository), signal, accept: (s) => s === 200 || s === 404 });
  await res.body.dump();
  return res.status === 200;
}

async function startSession(client: RegistryClient, repository: string, signal: AbortSignal | undefined): Promise<string> {
  const res = await client.send('POST', `/v2/${repository}/blobs/uploads/`, {
    scopes: pushScopes(repository),
    headers: { 'content-length': '0' },
    signal,
    accept: (s) => s === 202,
  });
  await res.body.dump();
  const location = header(res, 'location');
  if (!location) throw new OciError('oci.registry', `${client.registry}/${repository}: the upload session has no Location`);
  return new URL(location, res.url).toString();
}

function withDigest(location: string, digest: string): string {
  const u = new URL(location);
  u.searchParams.set('digest', digest);
  return u.toString();
}

/** A small blob (config, the empty descriptor): POST + one PUT. Skipped when present. */
export async function uploadBuffer(client: RegistryClient, repository: string, data: Buffer, signal?: AbortSignal): Promise<{ digest: string; size: number }> {
  const digest = sha256Of(data);
  if (await blobExists(client, repository, digest, signal)) return { digest, size: data.length };
  const location = await startSession(client, repository, signal);
  const res = await client.send('PUT', withDigest(location, digest), {
    scopes: pushScopes(repository),
    // Not a form: 2.8 parses form bodies and then finds no data (DIGEST_INVALID).
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(data.length) },
    body: data,
    signal,
    accept: (s) => s === 201,
  });
  await res.body.dump();
  return { digest, size: data.length };
}

/**
 * A large blob from a stream, in constant memory: one streamed PATCH
 * (chunked, back-pressured by undici.request — fetch would buffer it), then
 * the closing PUT with the digest computed on the way. A caller that hashed
 * the bytes already (a file) passes `digest`: it is not computed twice, the
 * registry checks it against what arrived (DIGEST_INVALID otherwise), as
 * `oras push` relies on.
 */
export async function uploadStream(
  client: RegistryClient,
  repository: string,
  body: Readable,
  options: { signal?: AbortSignal; onBytes?: (n: number) => void; digest?: string } = {},
): Promise<{ digest: string; size: number }> {
  const location = await startSession(client, repository, options.signal);
  const counter = new UploadCounter(options.digest === undefined, options.onBytes);
  body.on('error', (err) => counter.destroy(err));
  body.pipe(counter);
  const patched = await client.send('PATCH', location, {
    scopes: pushScopes(repository),
    headers: { 'content-type': 'application/octet-stream' },
    body: counter,
    signal: options.signal,
    accept: (s) => s === 202 || s === 204,
  });
  await patched.body.dump();
  const next = header(patched, 'location');
  const digest = options.digest ?? counter.digest();
  const res = await client.send('PUT', withDigest(next ? new URL(next, patched.url).toString() : location, digest), {
    scopes: pushScopes(repository),
    headers: { 'content-type': 'application/octet-stream', 'content-length': '0' },
    signal: options.signal,
    accept: (s) => s === 201,
  });
  await res.body.dump();
  return { digest, size: counter.bytes };
}

/** PUT a manifest under a tag (or its digest); answers the digest of the bytes sent. */
export async function putManifest(
  client: RegistryClient,
  repository: string,
  reference: string,
  raw: Buffer,
  mediaType: string,
  signal?: AbortSignal,
): Promise<string> {
  const digest = sha256Of(raw);
  const res = await client.send('PUT', manifestPath(repository, reference), {
    scopes: pushScopes(repository),
    headers: { 'content-type': mediaType, 'content-length': String(raw.length) },
    body: raw,
    signal,
    accept: (s) => s === 201,
  });
  await res.body.dump();
  const claimed = header(res, 'docker-content-digest');
  if (claimed && claimed !== digest)
    throw new OciError('oci.digest', `${client.registry}/${repository}: the registry stored the manifest as ${claimed}, but its bytes hash to ${digest}`);
  return digest;
}
