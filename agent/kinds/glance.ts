import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { KupenstackError } from '../errors.ts';
import type { CloudConfig } from '../openstack/clouds.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { ServiceClient } from '../openstack/service.ts';
import { pathOf, toError } from '../openstack/transport.ts';

/**
 * Glance helpers shared by the URL upload and (later) the OCI pipeline:
 * JSON-patch updates, disk sniffing, and a hash check that holds back the
 * last chunk so a bad download never completes an upload.
 */

export type PatchOp = { op: 'add' | 'replace' | 'remove'; path: string; value?: unknown };

/** Glance wants its own media type for PATCH; the transport would label a `json` body application/json. */
export async function patchImage(image: ServiceClient, id: string, ops: PatchOp[], signal?: AbortSignal): Promise<Record<string, unknown>> {
  const res = await image.call<Record<string, unknown>>('PATCH', `/images/${id}`, {
    body: Buffer.from(JSON.stringify(ops)),
    headers: { 'content-type': 'application/openstack-images-v2.1-json-patch' },
    signal,
  });
  return res.body;
}

/** JSON-pointer escaping of a property name (`~` and `/`). */
export function pointer(key: string): string {
  return `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

// Sniffing lives with the OCI pipeline (oci/sniff.ts); re-exported for the URL upload.
export { checkDeclaredFormat, sniffBytes, sniffDiskFormat } from '../../oci/sniff.ts';

/** Reads the first `size` bytes and hands back a stream that still yields everything. */
export async function peek(source: Readable, size: number): Promise<{ head: Buffer; stream: Readable }> {
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let length = 0;
  let done = false;
  while (length < size) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    chunks.push(r.value);
    length += r.value.length;
  }
  const head = Buffer.concat(chunks);
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      if (head.length > 0) yield head;
      while (!done) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      // Closes the source too when the consumer gives up early.
      await it.return?.();
    }
  }
  return { head, stream: Readable.from(rest(), { objectMode: false }) };
}

/**
 * Hashes what flows through and keeps the latest chunk back until the end:
 * on a digest mismatch the stream fails before its last byte, so the upload
 * is cut short and Glance leaves the image `queued` instead of `active`.
 */
export class HoldBackSha256 extends Transform {
  readonly expected: string | undefined;
  private readonly hash = createHash('sha256');
  private held: Buffer | undefined;
  bytes = 0;
  digest: string | undefined;
  mismatch: KupenstackError | undefined;

  constructor(expected: string | undefined) {
    super();
    this.expected = expected;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    const previous = this.held;
    this.held = chunk;
    callback(null, previous);
  }

  override _flush(callback: TransformCallback): void {
    this.digest = this.hash.digest('hex');
    if (this.expected && this.digest !== this.expected) {
      this.mismatch = new KupenstackError('image.checksum', `the downloaded disk has sha256 ${this.digest}, not ${this.expected} as spec.source.url.sha256 says; the upload was refused`);
      callback(this.mismatch);
      return;
    }
    if (this.held) this.push(this.held);
    callback();
  }
}

const dispatchers = new WeakMap<CloudConfig, Dispatcher>();

/** The same TLS settings as the transport's: off only when the cloud says so, or its own CA. */
function dispatcherFor(cloud: CloudConfig): Dispatcher | undefined {
  if (cloud.verify && !cloud.cacert) return undefined;
  let d = dispatchers.get(cloud);
  if (!d) {
    d = new Agent({ connect: { rejectUnauthorized: cloud.verify, ...(cloud.cacert ? { ca: readFileSync(cloud.cacert) } : {}) } });
    dispatchers.set(cloud, d);
  }
  return d;
}

/**
 * `PUT /images/{id}/file` from a stream, in constant memory. Not through the
 * transport's fetch(): fetch tees a streamed request body (to replay it on a
 * redirect) and the unread branch keeps every byte, a whole disk in memory
 * (nodejs/undici#4058). undici's request() writes with back-pressure.
 * Counted like every other call; a failure is the usual OpenStackError.
 */
export async function putImageData(image: ServiceClient, id: string, body: Readable, options: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<void> {
  const token = await image.session.token(image.scope);
  const url = `${await image.base()}/images/${id}/file`;
  const where = { service: 'image', method: 'PUT' as const, url };
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let status = 0;
  try {
    const res = await request(url, {
      method: 'PUT',
      body,
      headers: { 'x-auth-token': token.value, 'content-type': 'application/octet-stream', accept: 'application/json' },
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
      headersTimeout: options.timeoutMs,
      dispatcher: dispatcherFor(image.session.cloud),
    });
    status = res.statusCode;
    const text = await res.body.text();
    if (status !== 204 && status !== 200) {
      const headers = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      throw toError(where, { status, headers, text });
    }
  } catch (err) {
    if (err instanceof OpenStackError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new OpenStackError({ status: 0, service: 'image', method: 'PUT', path: pathOf(url), detail: `upload cut short: ${detail}` }, { cause: err });
  } finally {
    image.session.counters.record('image', 'PUT', status);
  }
}
