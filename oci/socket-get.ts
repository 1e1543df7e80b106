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

/** A slab with less room than this is handed on and a new one started (a read takes up to 64 KiB). */
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

/** The slab being filled: where the kernel writes next, and which of its bytes are not handed on yet. */
class SlabCursor {
  slab = slabPool.take();
  /** Bytes of the slab the kernel wrote. */
  used = 0;
  /** Of those, the first not handed on yet. */
  start = 0;
  private heldSince = performance.now();

  /** Where the next read goes: behind the last one, or a new slab when this one has too little room. */
  next(): Uint8Array {
    if (this.slab.length - this.used < minRoom) {
      slabPool.retire(this.slab);
      this.slab = slabPool.take();
      this.used = this.start = 0;
    }
    return this.slab.subarray(this.used);
  }

  /** The bytes not handed on fill the slab, or waited long enough. */
  due(): boolean {
    return this.used > this.start && (this.slab.length - this.used < minRoom || performance.now() - this.heldSince > maxHoldMs);
  }

  /** Hands the bytes not handed on to `body`; false when the body is full. */
  handOn(body: Readable): boolean {
    if (this.used === this.start) return true;
    const piece = slabPool.handOut(this.slab.subarray(this.start, this.used));
    this.start = this.used;
    this.heldSince = performance.now();
    return body.push(piece);
  }
}

/**
 * Sends the GET and settles with the status and headers once they are in;
 * the body (when this path reads it) follows as slab pieces. A connection
 * that breaks or goes idle fails the promise; in the body, the bytes that
 * came are handed on and the body ends short of its Content-Length (the
 * caller counts, and resumes from the bytes it has: blob.ts).
 */
export function socketGet(options: SocketGetOptions): Promise<SocketResponse> {
  const { url } = options;
  return new Promise<SocketResponse>((resolve, reject) => {
    const request = requestHead('GET', url, options.headers);
    if (request === undefined) return reject(new OciError('oci.registry', `a request header for ${url.host} holds a line break; refused`));
    const body = new SocketBody({ highWaterMark: slabPool.slabBytes });
    const cursor = new SlabCursor();
    let remaining = -1; // body bytes still to come; -1 while the head is read
    let settled = false;
    let done = false;
    // Before the head: an `oci.network` OciError (the caller retries); in the body (an abort, a protocol error): the body fails with it.
    const fail = (message: string, cause?: unknown): false => {
      if (done) return false;
      done = true;
      socket.destroy();
      if (!settled) {
        settled = true;
        reject(cause instanceof OciError ? cause : new OciError('oci.network', message, { cause }));
      } else body.destroy(cause instanceof OciError ? cause : new Error(message, { cause }));
      return false;
    };
    // Lost in the body: what came goes on (held bytes too, or a resume would ask for them again), then the body ends short.
    const lost = (message: string, cause?: unknown): false => {
      if (!settled || done) return fail(message, cause);
      done = true;
      socket.destroy();
      cursor.handOn(body);
      body.push(null);
      return false;
    };
    const finish = (): false => {
      done = true;
      socket.destroy();
      return false;
    };
    const readHead = (): boolean => {
      const end = cursor.slab.subarray(0, cursor.used).indexOf('\r\n\r\n');
      if (end < 0)
        return cursor.used < maxHeadBytes || fail('', new OciError('oci.registry', `${url.host}: the answer's headers are longer than ${maxHeadBytes} bytes`));
      const head: ResponseHead | undefined = parseResponseHead(cursor.slab.toString('latin1', 0, end));
      if (!head) return fail('', new OciError('oci.registry', `${url.host}: the answer does not start with an HTTP/1.1 status line`));
      const length = head.status === 200 || head.status === 206 ? plainBodyLength(head.headers) : undefined;
      settled = true;
      resolve({ ...head, body: length === undefined ? undefined : body });
      if (length === undefined) return finish();
      cursor.start = end + 4;
      remaining = length - (cursor.used - cursor.start);
      return afterBody();
    };
    const afterBody = (): boolean => {
      if (remaining < 0) return fail('', new OciError('oci.registry', `${url.host}: the answer holds more bytes than its Content-Length`));
      if (remaining === 0) {
        cursor.handOn(body);
        body.push(null);
        return finish();
      }
      if (!cursor.due() || cursor.handOn(body)) return true;
      // The reader is full: no reads (TCP holds the sender back) and no idle clock until it asks for more.
      body.paused = true;
      socket.setTimeout(0);
      return false;
    };
    const onread = {
      buffer: (): Uint8Array => cursor.next(),
      callback: (n: number): boolean => {
        cursor.used += n;
        if (remaining < 0) return readHead();
        remaining -= n;
        return afterBody();
      },
    };
    const socket = connectSocket(url, { ca: options.ca, onread });
    body.socket = socket;
    body.resumed = () => socket.setTimeout(options.timeoutMs);
    socket.setTimeout(options.timeoutMs, () => lost(`${url.host}: no data for ${options.timeoutMs} ms`));
    socket.on('error', (err) => lost(`GET ${url.host}${url.pathname} failed: ${err.message}`, err));
    socket.on('close', () => lost(`${url.host} closed the connection before its answer`));
    const onAbort = (): false => fail('aborted', options.signal?.reason);
    if (options.signal?.aborted) return void onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('close', () => {
      options.signal?.removeEventListener('abort', onAbort);
      slabPool.retire(cursor.slab);
    });
    socket.write(request);
  });
}
