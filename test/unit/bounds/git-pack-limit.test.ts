import { createHash, randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { PackLimit } from '../../../agent/source/git-pack-limit.ts';

/** A pack object: its type and size header (little-endian 4 then 7 bits), then what follows (a delta's base), then the zlib data. */
function object(type: number, data: Buffer, before: Buffer = Buffer.alloc(0)): Buffer {
  const head: number[] = [];
  let size = data.length;
  let byte = (type << 4) | (size & 15);
  size = Math.floor(size / 16);
  while (size > 0) {
    head.push(byte | 0x80);
    byte = size & 0x7f;
    size = Math.floor(size / 128);
  }
  head.push(byte);
  return Buffer.concat([Buffer.from(head), before, deflateSync(data)]);
}

function pack(objects: Buffer[]): Buffer {
  const header = Buffer.alloc(12);
  header.write('PACK', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(objects.length, 8);
  const body = Buffer.concat([header, ...objects]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

const pkt = (payload: Buffer): Buffer => Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0'), 'latin1'), payload]);

/** An upload-pack answer with side-band-64k: NAK, then the pack in band 1 in pieces of `piece` bytes, a progress line, flush. */
function answer(p: Buffer, piece = 1000): Buffer {
  const parts = [pkt(Buffer.from('NAK\n')), pkt(Buffer.concat([Buffer.from([2]), Buffer.from('Counting objects\n')]))];
  for (let i = 0; i < p.length; i += piece) parts.push(pkt(Buffer.concat([Buffer.from([1]), p.subarray(i, i + piece)])));
  parts.push(Buffer.from('0000'));
  return Buffer.concat(parts);
}

/** Feeds the answer in chunks of `chunk` bytes; the error it throws, if any. */
function feed(limit: PackLimit, bytes: Buffer, chunk = 700): unknown {
  try {
    for (let i = 0; i < bytes.length; i += chunk) limit.push(bytes.subarray(i, i + chunk));
    return undefined;
  } catch (err) {
    return err;
  }
}

const limits = { fetchBytes: 1024 * 1024, blobBytes: 64 * 1024 };

describe("a Sync's Git fetch bounded as it arrives", () => {
  it('a pack of small files passes', () => {
    const small = pack([object(1, Buffer.from('tree x\n')), object(3, Buffer.from('kind: Network\n')), object(3, Buffer.alloc(60 * 1024, 7))]);
    expect(feed(new PackLimit(limits, 'https://git.example/r.git'), answer(small))).toBeUndefined();
  });

  it('a blob over the bound is refused from its header, even one that compresses to almost nothing', () => {
    const zeros = Buffer.alloc(8 * 1024 * 1024);
    const huge = pack([object(3, Buffer.from('a\n')), object(3, zeros)]);
    expect(huge.length).toBeLessThan(limits.fetchBytes / 8);
    const err = feed(new PackLimit(limits, 'https://git.example/r.git'), answer(huge));
    expect(err).toMatchObject({ code: 'bound.git-blob-bytes' });
    expect((err as Error).message).toMatch(/^bound\.git-blob-bytes: 8 MiB > 64 KiB \(--max-git-blob-bytes\): https:\/\/git\.example\/r\.git: a blob/);
  });

  it('a delta that makes a file over the bound is refused (its data states the size it makes)', () => {
    // A delta: base size 10, target size 1 MiB (varints), then an insert of one byte, all small on the wire.
    const delta = Buffer.from([10, 0x80, 0x80, 0x40, 1, 0x61]);
    const p = pack([object(3, Buffer.from('0123456789')), object(6, delta, Buffer.from([0x05]))]);
    const err = feed(new PackLimit(limits, 'r'), answer(p));
    expect(err).toMatchObject({ code: 'bound.git-blob-bytes' });
    expect((err as Error).message).toContain('1 MiB > 64 KiB');
  });

  it('a fetch over its bytes is refused as the bytes arrive, and at once when Content-Length says so', () => {
    // Incompressible files, each within the file bound: 40 of them are 2.4 MB on the wire.
    const many = pack(Array.from({ length: 40 }, () => object(3, randomBytes(60_000))));
    const limit = new PackLimit({ fetchBytes: 100 * 1024, blobBytes: 64 * 1024 }, 'r');
    expect(feed(limit, answer(many))).toMatchObject({ code: 'bound.git-fetch-bytes' });
    expect(() => new PackLimit(limits, 'r').checkLength(2 * 1024 * 1024)).toThrow('bound.git-fetch-bytes: 2 MiB > 1 MiB (--max-git-fetch-bytes)');
    expect(() => new PackLimit(limits, 'r').checkLength(undefined)).not.toThrow();
  });

  it('a pack without side band is read as it comes', () => {
    const huge = pack([object(3, Buffer.alloc(1024 * 1024))]);
    const raw = Buffer.concat([pkt(Buffer.from('NAK\n')), huge]);
    expect(feed(new PackLimit(limits, 'r'), raw)).toMatchObject({ code: 'bound.git-blob-bytes' });
  });
});
