import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import type { CloudConfig } from '../openstack/clouds.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { ServiceClient } from '../openstack/service.ts';
import { pathOf, toError } from '../openstack/transport.ts';
import { socketPut } from './socket-put.ts';

/**
 * The Glance image API calls the Image kind (URL and OCI sources) and
 * `kupenstack image import` share, beyond the transport's plain JSON calls:
 * JSON-patch updates, a delete that unprotects first, and the streamed data
 * upload.
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

/** Deletes an image the caller owns; a protected one is unprotected first (the schema promises it). */
export async function deleteImage(image: ServiceClient, id: string, signal?: AbortSignal): Promise<void> {
  const url = `/images/${id}`;
  const res = await image.call('DELETE', url, { ok: [204, 403, 404], signal });
  if (res.status !== 403) return;
  await patchImage(image, id, [{ op: 'replace', path: '/protected', value: false }], signal);
  await image.remove(url);
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
 * `PUT /images/{id}/file` (or `/stage`) from a stream, in constant memory. Not through the
 * transport's fetch(): fetch tees a streamed request body (to replay it on a
 * redirect) and the unread branch keeps every byte, a whole disk in memory
 * (nodejs/undici#4058). With `length` the body goes with a Content-Length
 * instead of chunked, so the caller need not gather chunks for Glance, on our
 * own socket writer (socket-put.ts: written pieces go back to the slab pool);
 * without, chunked through undici's request(). Both write with back-pressure;
 * a body that ends short is refused here and by Glance (the image stays queued).
 * Counted like every other call; a failure is the usual OpenStackError.
 */
export async function putImageData(
  image: ServiceClient,
  id: string,
  body: Readable,
  options: { timeoutMs: number; signal?: AbortSignal | undefined; length?: number | undefined; to?: 'file' | 'stage' | undefined },
): Promise<void> {
  const token = await image.session.token(image.scope);
  // `stage`: the interoperable import's first step (glance-direct), the same bytes into Glance's staging area.
  const url = `${await image.base()}/images/${id}/${options.to ?? 'file'}`;
  const where = { service: 'image', method: 'PUT' as const, url };
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let status = 0;
  try {
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const headers = { 'x-auth-token': token.value, 'content-type': 'application/octet-stream', accept: 'application/json' };
    const res =
      options.length !== undefined
        ? await putOnSocket(image.session.cloud, url, body, headers, options.length, signal)
        : await putThroughUndici(image.session.cloud, url, body, headers, signal, options.timeoutMs);
    status = res.status;
    if (status !== 204 && status !== 200) {
      const answered = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) answered.set(k, Array.isArray(v) ? v.join(', ') : v);
      throw toError(where, { status, headers: answered, text: res.text });
    }
  } catch (err) {
    if (err instanceof OpenStackError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new OpenStackError({ status: 0, service: 'image', method: 'PUT', path: pathOf(url), detail: `upload cut short: ${detail}` }, { cause: err });
  } finally {
    image.session.counters.record('image', 'PUT', status);
  }
}

type PutAnswer = { status: number; headers: Record<string, string | string[] | undefined>; text: string };

/** With a known length: our own socket writer, which gives each piece back to the slab pool once written (socket-put.ts). */
async function putOnSocket(
  cloud: CloudConfig,
  url: string,
  body: Readable,
  headers: Record<string, string>,
  length: number,
  signal: AbortSignal,
): Promise<PutAnswer> {
  const ca = cloud.cacert ? readFileSync(cloud.cacert) : undefined;
  return socketPut(new URL(url), body, { headers, length, ca, rejectUnauthorized: cloud.verify, signal });
}

/** Chunked (no length known): undici's request(), which writes with back-pressure. */
async function putThroughUndici(
  cloud: CloudConfig,
  url: string,
  body: Readable,
  headers: Record<string, string>,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<PutAnswer> {
  const res = await request(url, { method: 'PUT', body, headers, signal, headersTimeout: timeoutMs, dispatcher: dispatcherFor(cloud) });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/**
 * `GET /images/{id}/file` as a stream (constant memory: undici's request()
 * reads with back-pressure). Counted like every other call; a refusal is the
 * usual OpenStackError. 204 (no data yet) is refused too: there is nothing to read.
 */
export async function getImageData(image: ServiceClient, id: string, options: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<Readable> {
  const token = await image.session.token(image.scope);
  const url = `${await image.base()}/images/${id}/file`;
  const where = { service: 'image', method: 'GET' as const, url };
  let status = 0;
  try {
    const res = await request(url, {
      method: 'GET',
      headers: { 'x-auth-token': token.value, accept: 'application/octet-stream' },
      ...(options.signal ? { signal: options.signal } : {}),
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      dispatcher: dispatcherFor(image.session.cloud),
    });
    status = res.statusCode;
    if (status !== 200) {
      const text = await res.body.text();
      const headers = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
      throw toError(where, { status, headers, text: text || (status === 204 ? 'the image has no data' : '') });
    }
    return res.body;
  } catch (err) {
    if (err instanceof OpenStackError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new OpenStackError({ status: 0, service: 'image', method: 'GET', path: pathOf(url), detail: `download failed: ${detail}` }, { cause: err });
  } finally {
    image.session.counters.record('image', 'GET', status);
  }
}
