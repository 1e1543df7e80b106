import type { Hash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay } from '../lib/retry.ts';
import { describe, header, type BlobAnswer, type RegistryClient } from './client.ts';
import { newHash, parseDigest } from './digest.ts';
import { OciError } from './errors.ts';
import type { Descriptor } from './manifest.ts';
import { pullScope } from './manifest.ts';

/**
 * A blob as a stream that is verified as it flows: exactly `size` bytes
 * hashing to `digest`, or an error before 'end'. A connection that breaks
 * mid-blob (reset, 5xx on the retry, short body) is resumed with
 * `Range: bytes=<received>-` and `If-Range` — bounded by `retries`.
 */

export interface BlobOptions {
  signal?: AbortSignal | undefined;
  /** Resumptions after a broken connection. Default 5. */
  retries?: number;
  /** Called with every chunk's length (counters, progress). */
  onBytes?: (n: number) => void;
}

export function blobPath(repository: string, digest: string): string {
  return `/v2/${repository}/blobs/${digest}`;
}

export function openBlob(client: RegistryClient, repository: string, descriptor: Pick<Descriptor, 'digest' | 'size'>, options: BlobOptions = {}): Readable {
  return Readable.from(blobChunks(client, repository, descriptor, options), { objectMode: false, highWaterMark: 1 << 20 });
}

/** One blob's download as it goes: where it is, what it hashes to so far, and how often it broke off. */
interface Pull {
  client: RegistryClient;
  repository: string;
  digest: string;
  size: number;
  where: string;
  options: BlobOptions;
  hash: Hash;
  received: number;
  failures: number;
  lastProblem: string;
  etag: string | undefined;
}

async function* blobChunks(
  client: RegistryClient,
  repository: string,
  descriptor: Pick<Descriptor, 'digest' | 'size'>,
  options: BlobOptions,
): AsyncGenerator<Buffer> {
  const { digest, size } = descriptor;
  const where = `blob ${digest} of ${client.registry}/${repository}`;
  const p: Pull = { client, repository, digest, size, where, options, hash: newHash(digest), received: 0, failures: 0, lastProblem: '', etag: undefined };
  const retries = options.retries ?? 5;
  // A resume, not a retry of one call (lib/retry.ts): each attempt continues at `received` inside this generator; the waits are lib/retry's.
  const brokeOff = async (problem: string): Promise<void> => {
    p.failures++;
    p.lastProblem = problem;
    await sleep(backoffDelay(p.failures + 1, 250, 4000), undefined, { signal: options.signal });
  };
  while (p.received < size || (p.received === 0 && size === 0)) {
    if (p.failures > retries) {
      throw new OciError(
        'oci.truncated',
        `${where}: the download broke off ${p.failures} times (last: ${p.lastProblem}) after ${p.received} of ${size} bytes; nothing was used — retry later or check the registry`,
      );
    }
    const res = await request(p);
    if (typeof res === 'string') {
      await brokeOff(res);
      continue;
    }
    p.etag ??= header(res, 'etag');
    const skip = skipOf(res, p);
    try {
      yield* bodyChunks(res, skip, p);
      // A body that ended short (the socket path ends it so when the connection is lost) is resumed as a broken one is, after the same wait.
      if (p.received < size) await brokeOff(`body ended at byte ${p.received}`);
    } catch (err) {
      // A connection lost mid-body (`oci.network`, or a transport's own error) is resumed; what the registry got wrong is not.
      if ((err instanceof OciError && err.code !== 'oci.network') || options.signal?.aborted) throw err;
      await brokeOff((err as Error).message);
    }
    if (size === 0) break;
  }
  const actual = `${parseDigest(digest).algorithm}:${p.hash.digest('hex')}`;
  if (actual !== digest) {
    throw new OciError(
      'oci.digest',
      `${where}: the ${size} bytes served hash to ${actual}, not ${digest} (corrupted storage, a tampering proxy, or a manifest naming the wrong digest); refused before the end of the stream`,
    );
  }
}

/** One attempt's GET, from `received` on: the response, or what broke (a network error, a 5xx) for the next attempt. */
async function request(p: Pull): Promise<BlobAnswer | string> {
  const headers: Record<string, string> = {};
  if (p.received > 0) {
    headers.range = `bytes=${p.received}-`;
    if (p.etag) headers['if-range'] = p.etag;
  }
  let res: BlobAnswer;
  try {
    res = await p.client.getBlob(blobPath(p.repository, p.digest), {
      scopes: [pullScope(p.repository)],
      headers,
      signal: p.options.signal,
      accept: (s) => s === 200 || s === 206 || s >= 500,
    });
  } catch (err) {
    if (p.options.signal?.aborted || !(err instanceof OciError) || err.code !== 'oci.network') throw err;
    return err.message;
  }
  if (res.status < 500) return res;
  res.body.destroy();
  return `HTTP ${res.status} from ${describe(res.url)}`;
}

/** The bytes of this body to skip: a 200 starts at 0 (the server ignored Range), a 206 must start at `received` (Content-Range). */
function skipOf(res: BlobAnswer, p: Pull): number {
  if (res.status !== 206) return p.received;
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header(res, 'content-range') ?? '');
  if (!m || Number(m[1]) !== p.received) {
    res.body.destroy();
    throw new OciError(
      'oci.registry',
      `${p.where}: asked to resume at byte ${p.received}, the registry answered Content-Range "${header(res, 'content-range') ?? ''}"`,
    );
  }
  return 0;
}

/** One body's new bytes, counted and hashed as they pass; more than the descriptor's size is refused. */
async function* bodyChunks(res: BlobAnswer, skip: number, p: Pull): AsyncGenerator<Buffer> {
  for await (const piece of res.body as AsyncIterable<Buffer>) {
    let chunk = piece;
    if (skip > 0) {
      if (chunk.length <= skip) {
        skip -= chunk.length;
        continue;
      }
      chunk = chunk.subarray(skip);
      skip = 0;
    }
    p.client.bytesRead += chunk.length;
    p.options.onBytes?.(chunk.length);
    if (p.received + chunk.length > p.size) {
      // The bytes up to the stated size go on as any others (a large piece may hold both); the first byte beyond fails the stream.
      const within = chunk.subarray(0, p.size - p.received);
      p.received += within.length;
      p.hash.update(within);
      if (within.length > 0) yield within;
      res.body.destroy();
      throw new OciError('oci.too-large', `${p.where} is longer than the ${p.size} bytes its descriptor states; refused`);
    }
    p.received += chunk.length;
    p.hash.update(chunk);
    yield chunk;
  }
}

/** The first `length` bytes of a blob (pre-flight sniffing), not verified (the full read is). */
export async function readBlobHead(client: RegistryClient, repository: string, digest: string, length: number, signal?: AbortSignal): Promise<Buffer> {
  const res = await client.send('GET', blobPath(repository, digest), {
    scopes: [pullScope(repository)],
    headers: { range: `bytes=0-${length - 1}` },
    signal,
    accept: (s) => s === 200 || s === 206,
  });
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    total += chunk.length;
    if (total >= length) break;
  }
  res.body.destroy();
  client.bytesRead += total;
  return Buffer.concat(chunks).subarray(0, length);
}
