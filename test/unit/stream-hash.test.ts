import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { offloadMinBytes, streamHash, type HashAlgorithm } from '../../lib/hash/stream-hash.ts';

/** Feeds `data` in pieces of the given sizes (cycled), awaiting only when the hash asks for it. */
async function hashInPieces(algorithm: HashAlgorithm, data: Buffer, pieces: number[], expectedBytes?: number): Promise<string> {
  const h = streamHash(algorithm, expectedBytes);
  for (let at = 0, i = 0; at < data.length; i++) {
    const n = pieces[i % pieces.length]!;
    const full = h.update(data.subarray(at, at + n));
    if (full) await full;
    at += n;
  }
  return h.digest();
}

const reference = (algorithm: HashAlgorithm, data: Buffer): string => createHash(algorithm).update(data).digest('hex');

describe('streamHash (hashing on a worker thread through a shared ring)', () => {
  const data = randomBytes(offloadMinBytes + 3 * 1024 * 1024 + 17);

  it('gives the digest of node:crypto for network-sized chunks, chunks larger than the ring and odd sizes', async () => {
    expect(await hashInPieces('sha256', data, [65536])).toBe(reference('sha256', data));
    expect(await hashInPieces('sha256', data, [5 * 1024 * 1024 + 3, 1, 4096])).toBe(reference('sha256', data));
    expect(await hashInPieces('sha512', data, [1 << 20, 333])).toBe(reference('sha512', data));
  });

  it('keeps concurrent hashes apart (more of them than the pool keeps)', async () => {
    const inputs = [0, 1, 2, 3].map((i) => Buffer.concat([data.subarray(0, 9 << 20), Buffer.from([i])]));
    const digests = await Promise.all(inputs.map((d, i) => hashInPieces('sha256', d, [65536 + i * 1000])));
    expect(digests).toEqual(inputs.map((d) => reference('sha256', d)));
    expect(new Set(digests).size).toBe(4);
  });

  it('leaves a reused worker clean after a hash was given up half-way', async () => {
    const h = streamHash('sha256');
    await h.update(data.subarray(0, 3 << 20));
    h.release();
    expect(await hashInPieces('sha256', data, [65536])).toBe(reference('sha256', data));
  });

  it('hashes small inputs inline, and an empty input correctly', async () => {
    const small = randomBytes(1000);
    const h = streamHash('sha256', small.length);
    expect(h.update(small)).toBeUndefined();
    expect(await h.digest()).toBe(reference('sha256', small));
    expect(await streamHash('sha256').digest()).toBe(reference('sha256', Buffer.alloc(0)));
  });

  it('holds back the writer while the ring is full instead of growing', async () => {
    const h = streamHash('sha256');
    // A chunk sixteen times the ring: copied far faster than hashed, so update cannot take it at once and answers a promise.
    const big = Buffer.alloc(64 << 20, 7);
    const full = h.update(big);
    expect(full).toBeInstanceOf(Promise);
    await full;
    expect(await h.digest()).toBe(reference('sha256', big));
  });
});
