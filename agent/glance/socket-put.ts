import type { Readable } from 'node:stream';
import { KupenstackError } from '../../lib/errors.ts';
import { connectSocket, parseResponseHead, plainBodyLength, requestHead, type ResponseHead } from '../../lib/http/socket-http.ts';
import { slabPool } from '../../lib/stream/slab-pool.ts';

/**
 * Glance's `PUT /images/{id}/file` of a body whose length is known, on a bare
 * socket: each piece is written as it comes (the body waits while the
 * socket's buffer is full) and, once the kernel has it, given back to the
 * slab pool the blob reader filled it from (lib/stream/slab-pool.ts). A pull
 * into Glance then turns the same few MiB over instead of a GiB of buffers
 * for the collector: measured on a 1 GiB import with the agent's flags, peak
 * RSS 113 MB through undici with its 64 KiB reads, 170 MB with 1 MiB slabs
 * the collector frees, and the figure in docs/explanation/performance.md
 * with this writer.
 */

export interface SocketPutOptions {
  headers: Record<string, string>;
  length: number;
  ca?: Buffer | undefined;
  rejectUnauthorized?: boolean | undefined;
  /** The caller's deadline (the whole upload) and cancellation. */
  signal?: AbortSignal | undefined;
}

export interface SocketPutAnswer extends ResponseHead {
  text: string;
}

/** An answer's bytes, more than any Glance answer holds: a bigger one is cut off here. */
const maxAnswerBytes = 1 << 20;

const fault = (message: string, cause?: unknown): KupenstackError => new KupenstackError('image.oci-upload', message, { cause });

export function socketPut(url: URL, body: Readable, options: SocketPutOptions): Promise<SocketPutAnswer> {
  return new Promise<SocketPutAnswer>((resolve, reject) => {
    const head = requestHead('PUT', url, { ...options.headers, 'content-length': String(options.length) });
    if (head === undefined) return reject(fault(`a request header for ${url.host} holds a line break; refused`));
    const socket = connectSocket(url, { ca: options.ca, rejectUnauthorized: options.rejectUnauthorized });
    let sent = 0;
    let settled = false;
    const answer: Buffer[] = [];
    let answerBytes = 0;
    const settle = (err: Error | undefined, value?: SocketPutAnswer): void => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      body.off('data', onData);
      socket.destroy();
      // An answer before the last byte (a refusal): the rest of the body is not read.
      if (sent < options.length) body.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const onData = (chunk: Buffer): void => {
      sent += chunk.length;
      if (sent > options.length) return settle(fault(`the body is longer than the ${options.length} bytes announced`));
      if (!socket.write(chunk, (err) => err || slabPool.release(chunk))) body.pause();
    };
    const onAbort = (): void => settle(options.signal?.reason instanceof Error ? options.signal.reason : fault('aborted'));
    const parsed = (): SocketPutAnswer | undefined => {
      const all = Buffer.concat(answer);
      const end = all.indexOf('\r\n\r\n');
      const h = end < 0 ? undefined : parseResponseHead(all.toString('latin1', 0, end));
      if (!h) return undefined;
      const length = plainBodyLength(h.headers);
      const text = all.subarray(end + 4);
      // 204 and 304 have no body, whatever the headers say.
      if (h.status === 204 || h.status === 304) return { ...h, text: '' };
      if (length !== undefined && text.length < length) return undefined;
      return { ...h, text: text.toString('utf8') };
    };
    socket.on('data', (chunk: Buffer) => {
      answer.push(chunk);
      answerBytes += chunk.length;
      const done = parsed();
      if (done && (done.status === 204 || done.status === 304 || plainBodyLength(done.headers) !== undefined)) settle(undefined, done);
      else if (answerBytes > maxAnswerBytes) settle(fault(`${url.host} answered with more than ${maxAnswerBytes} bytes`));
    });
    socket.on('end', () => {
      const done = parsed();
      settle(done ? undefined : fault(`${url.host} closed the connection without a complete answer after ${sent} of ${options.length} bytes`), done);
    });
    socket.on('error', (err) => settle(fault(err.message, err)));
    socket.on('close', () => settle(fault(`${url.host} closed the connection after ${sent} of ${options.length} bytes`)));
    socket.on('drain', () => body.resume());
    body.on('error', (err) => settle(err));
    body.on('end', () => {
      if (sent < options.length) settle(fault(`the body ended after ${sent} of the ${options.length} bytes announced`));
    });
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    socket.write(head);
    body.on('data', onData);
  });
}
