import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay } from '../lib/retry.ts';
import { describe, header, type RegistryClient, type RegistryResponse } from './client.ts';
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

async function* blobChunks(client: RegistryClient, repository: string, descriptor: Pick<Descriptor, 'digest' | 'size'>, options: BlobOptions): AsyncGenerator<Buffer> {
  const { digest, size } = descriptor;
  const hash = newHash(digest);
  const retries = options.retries ?? 5;
  const where = `blob ${digest} of ${client.registry}/${repository}`;
  let received = 0;
  let failures = 0;
  let etag: string | undefined;
  let lastProblem = '';
  // A resume, not a retry of one call (lib/retry.ts): each attempt continues at `received` inside this generator; the waits are lib/retry's.
  const pause = (): Promise<void> => sleep(backoffDelay(failures + 1, 250, 4000), undefined, { signal: options.signal });
  while (received < size || (received === 0 && size === 0)) {
    if (failures > retries) {
      throw new OciError(
        'oci.truncated',
        `${where}: the download broke off ${failures} times (last: ${lastProblem}) after ${received} of ${size} bytes; nothing was used — retry later or check the registry`,
      );
    }
    const headers: Record<string, string> = {};
    if (received > 0) {
      headers.range = `bytes=${received}-`;
      if (etag) headers['if-range'] = etag;
    }
    let res: RegistryResponse;
    try {
      res = await client.send('GET', blobPath(repository, digest), { scopes: [pullScope(repository)], headers, signal: options.signal, accept: (s) => s === 200 || s === 206 || s >= 500 });
    } catch (err) {
      if (options.signal?.aborted || !(err instanceof OciError) || err.code !== 'oci.network') throw err;
      failures++;
      lastProblem = err.message;
      await pause();
      continue;
    }
    if (res.status >= 500) {
      await res.body.dump().catch(() => undefined);
      failures++;
      lastProblem = `HTTP ${res.status} from ${describe(res.url)}`;
      await pause();
      continue;
    }
    etag ??= header(res, 'etag');
    // The offset of this body: 0 for a 200 (the server ignored Range), else what Content-Range says.
    let skip = 0;
    if (res.status === 206) {
      const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(header(res, 'content-range') ?? '');
      if (!m || Number(m[1]) !== received) {
        res.body.destroy();
        throw new OciError('oci.registry', `${where}: asked to resume at byte ${received}, the registry answered Content-Range "${header(res, 'content-range') ?? ''}"`);
      }
    } else {
      skip = received;
    }
    try {
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
        client.bytesRead += chunk.length;
        options.onBytes?.(chunk.length);
        if (received + chunk.length > size) {
          res.body.destroy();
          throw new OciError('oci.too-large', `${where} is longer than the ${size} bytes its descriptor states; refused`);
        }
        received += chunk.length;
        hash.update(chunk);
        yield chunk;
      }
      if (received < size) {
        failures++;
        lastProblem = `body ended at byte ${received}`;
      }
    } catch (err) {
      if (err instanceof OciError || options.signal?.aborted) throw err;
      failures++;
      lastProblem = (err as Error).message;
      await pause();
    }
    if (size === 0) break;
  }
  const actual = `${parseDigest(digest).algorithm}:${hash.digest('hex')}`;
  if (actual !== digest) {
    throw new OciError(
      'oci.digest',
      `${where}: the ${size} bytes served hash to ${actual}, not ${digest} (corrupted storage, a tampering proxy, or a manifest naming the wrong digest); refused before the end of the stream`,
    );
  }
}

/** The first `length` bytes of a blob (pre-flight sniffing), not verified (the full read is). */
export async function readBlobHead(client: RegistryClient, repository: string, digest: string, length: number, signal?: AbortSignal): Promise<Buffer> {
  const res = await client.send('GET', blobPath(repository, digest), { scopes: [pullScope(repository)], headers: { range: `bytes=0-${length - 1}` }, signal, accept: (s) => s === 200 || s === 206 });
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
