import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { connectSocket, parseResponseHead, plainBodyLength, requestHead, type ResponseHead } from '../lib/http/socket-http.ts';
import { slabPool } from '../lib/stream/slab-pool.ts';
import { OciError } from './errors.ts';

/**
 * A blob's GET read straight off the socket into slabs the reader owns
 * (Node's `onread`): the kernel writes each read behind the last one in a
 * 1 MiB slab, and the body is handed on in pieces of that slab, never one
 * fresh buffer per socket read. undici (the registry client's transport)
 * reads 64 KiB into a new buffer, copies it into its parser's memory and
 * passes it through its body stream: measured on a 512 MiB pull, 0.7 CPU-s
 * of user time beside 0.04 here, and the pull is then hashing-bound as oras
 * is. Only what a blob's body needs: one request per connection
 * (`Connection: close`), a body framed by Content-Length; anything else (a
 * 401 to answer, a redirect, a chunked body) is left to the client's full
 * path (client.ts), the caller's fallback.
 */

export interface SocketGetOptions {
  url: URL;
  /** Request headers besides Host and Connection (values never contain CR or LF). */
  headers: Record<string, string>;
  /** Extra CA bundle for https (the registry client's caFile). */
  ca?: Buffer | undefined;
  /** Idle time before the connection is given up (ms). */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

export interface SocketResponse {
  status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  /** The body of a 200 or 206 framed by Content-Length; undefined otherwise (the connection is closed, the body unread). */
  body: Readable | undefined;
}

/** A slab with less room than this is handed on and a new one started. */
const minRoom = 64 * 1024;
/** A body piece is handed on after this long at the latest, so a slow registry's bytes do not wait for a full slab. */
const maxHoldMs = 50;
const maxHeadBytes = 64 * 1024;

/** The body as a Readable: fed by the socket's reads, which stop (TCP backpressure) while the reader is full. */
class SocketBody extends Readable {
  socket: Socket | undefined;
  paused = false;
  resumed: () => void = () => undefined;

  override _read(): void {
    if (this.paused && this.socket) {
      this.paused = false;
      this.resumed();
      this.socket.resume();
    }
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.socket?.destroy();
    callback(err);
  }
}

/**
 * Sends the GET and settles with the status and headers once they are in;
 * the body (when this path reads it) follows as slab pieces. A connection
 * that breaks or goes idle fails the promise, or later the body: the caller
 * resumes from the bytes it has.
 */
export function socketGet(options: SocketGetOptions): Promise<SocketResponse> {
  const { url } = options;
  return new Promise<SocketResponse>((resolve, reject) => {
    const request = requestHead('GET', url, options.headers);
    if (request === undefined) return reject(new OciError('oci.registry', `a request header for ${url.host} holds a line break; refused`));
    const body = new SocketBody({ highWaterMark: slabPool.slabBytes });
    let slab = slabPool.take();
    let used = 0; // bytes of the slab the kernel wrote
    let start = 0; // of those, the first not handed on yet
    let heldSince = 0;
    let remaining = -1; // body bytes still to come; -1 while the head is read
    let settled = false;
    let done = false;
    // Before the head: an `oci.network` OciError (the caller retries); in the body: a plain Error, which the blob reader resumes after.
    const fail = (message: string, cause?: unknown): void => {
      if (done) return;
      done = true;
      socket.destroy();
      if (!settled) {
        settled = true;
        reject(cause instanceof OciError ? cause : new OciError('oci.network', message, { cause }));
      } else body.destroy(cause instanceof OciError ? cause : new Error(message, { cause }));
    };
    const finish = (): false => {
      done = true;
      socket.destroy();
      return false;
    };
    const handOnRest = (): void => {
      if (used > start) body.push(slabPool.handOut(slab.subarray(start, used)));
      start = used;
    };
    const handOn = (now: number): boolean => {
      const piece = slabPool.handOut(slab.subarray(start, used));
      start = used;
      heldSince = now;
      return body.push(piece);
    };
    const readHead = (): boolean => {
      const end = slab.subarray(0, used).indexOf('\r\n\r\n');
      if (end < 0) {
        if (used < maxHeadBytes) return true;
        fail('', new OciError('oci.registry', `${url.host}: the answer's headers are longer than ${maxHeadBytes} bytes`));
        return false;
      }
      const head: ResponseHead | undefined = parseResponseHead(slab.toString('latin1', 0, end));
      if (!head) {
        fail('', new OciError('oci.registry', `${url.host}: the answer does not start with an HTTP/1.1 status line`));
        return false;
      }
      const length = head.status === 200 || head.status === 206 ? plainBodyLength(head.headers) : undefined;
      settled = true;
      if (length === undefined) {
        resolve({ ...head, body: undefined });
        return finish();
      }
      start = end + 4;
      remaining = length - (used - start);
      heldSince = performance.now();
      resolve({ ...head, body });
      return afterBody();
    };
    const afterBody = (): boolean => {
      if (remaining < 0) {
        fail('', new OciError('oci.registry', `${url.host}: the answer holds more bytes than its Content-Length`));
        return false;
      }
      if (remaining === 0) {
        handOnRest();
        body.push(null);
        return finish();
      }
      const now = performance.now();
      if ((slab.length - used < minRoom || now - heldSince > maxHoldMs) && used > start && !handOn(now)) {
        // The reader is full: no reads (TCP holds the sender back) and no idle clock until it asks for more.
        body.paused = true;
        socket.setTimeout(0);
        return false;
      }
      return true;
    };
    const onread = {
      buffer: (): Uint8Array => {
        if (slab.length - used < minRoom) {
          slabPool.retire(slab);
          slab = slabPool.take();
          used = start = 0;
        }
        return slab.subarray(used);
      },
      callback: (n: number): boolean => {
        used += n;
        if (remaining < 0) return readHead();
        remaining -= n;
        return afterBody();
      },
    };
    const socket = connectSocket(url, { ca: options.ca, onread });
    body.socket = socket;
    body.resumed = () => socket.setTimeout(options.timeoutMs);
    socket.setTimeout(options.timeoutMs, () => fail(`${url.host}: no data for ${options.timeoutMs} ms`));
    socket.on('error', (err) => fail(`GET ${url.host}${url.pathname} failed: ${err.message}`, err));
    socket.on('close', () => fail(`${url.host} closed the connection ${settled ? `with ${remaining} body bytes to come` : 'before its answer'}`));
    const onAbort = (): void => fail('aborted', options.signal?.reason);
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('close', () => {
      options.signal?.removeEventListener('abort', onAbort);
      slabPool.retire(slab);
    });
    socket.write(request);
  });
}
