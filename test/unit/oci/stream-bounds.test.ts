import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { VerifyingStream } from '../../../oci/digest.ts';
import { OciError } from '../../../oci/errors.ts';
import { ByteLimit } from '../../../oci/sniff-gate.ts';

/**
 * The two bounds on a disk's bytes as they stream to Glance: VerifyingStream (the size an annotation or
 * descriptor states, the only bound on a compressed layer with uncompressed-size and uncompressed-digest
 * annotations) and ByteLimit (the configured limit otherwise). A lying or endless source must be cut
 * where it crosses the bound: not one byte beyond goes downstream, and the source is not read to its end
 * (a gzip bomb has no useful end). Found only at the end, the whole bomb would have reached Glance.
 */
const kib = Buffer.alloc(1024, 7);

/** A source of `chunks` KiB, counting how many were pulled. */
function source(chunks: number): { stream: Readable; pulled: () => number } {
  let pulled = 0;
  const stream = Readable.from(
    (function* () {
      for (; pulled < chunks; ) {
        pulled++;
        yield kib;
      }
    })(),
    { objectMode: false, highWaterMark: 1024 },
  );
  return { stream, pulled: () => pulled };
}

/** Pipes `chunks` KiB through `gate`; what reached the consumer and how the pipeline ended. */
async function through(gate: VerifyingStream | ByteLimit, chunks: number): Promise<{ received: number; pulled: number; error: unknown }> {
  const src = source(chunks);
  let received = 0;
  const sink = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      cb();
    },
  });
  const error = await pipeline(src.stream, gate, sink).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { received, pulled: src.pulled(), error };
}

const digestOf = (n: number): string => `sha256:${createHash('sha256').update(Buffer.concat(Array.from({ length: n }, () => kib))).digest('hex')}`;

describe('VerifyingStream: the stated size bounds the stream', () => {
  it('passes exactly the stated bytes with the stated digest', async () => {
    const r = await through(new VerifyingStream(digestOf(4), 'the disk', 4 * 1024), 4);
    expect(r).toEqual({ received: 4096, pulled: 4, error: undefined });
  });

  it('cuts a source longer than its stated size where it crosses it: oci.too-large, nothing beyond, the rest never read', async () => {
    const r = await through(new VerifyingStream(digestOf(2), 'the disk', 2 * 1024), 1000);
    expect(r.error).toBeInstanceOf(OciError);
    expect(r.error).toMatchObject({ code: 'oci.too-large', message: 'the disk is longer than the 2048 bytes its descriptor states; refused' });
    expect(r.received).toBeLessThanOrEqual(2048);
    expect(r.pulled).toBeLessThan(20);
  });

  it('fails a short source at its end (oci.truncated) and other bytes of the right size (oci.digest)', async () => {
    expect((await through(new VerifyingStream(digestOf(4), 'the disk', 4 * 1024), 3)).error).toMatchObject({ code: 'oci.truncated' });
    expect((await through(new VerifyingStream(digestOf(3), 'the disk', 4 * 1024), 4)).error).toMatchObject({ code: 'oci.digest' });
  });
});

describe('ByteLimit: the configured limit bounds a disk of unknown size', () => {
  it('passes a disk up to the limit', async () => {
    expect(await through(new ByteLimit(4 * 1024, 'image a'), 4)).toEqual({ received: 4096, pulled: 4, error: undefined });
  });

  it('cuts an endless source where it crosses the limit: oci.too-large naming the limit, nothing beyond, the rest never read', async () => {
    const r = await through(new ByteLimit(2 * 1024, 'image a'), 1000);
    expect(r.error).toBeInstanceOf(OciError);
    expect(r.error).toMatchObject({ code: 'oci.too-large', message: 'image a: the disk is larger than the limit of 2048 bytes; refused (raise the limit if this disk is expected)' });
    expect(r.received).toBeLessThanOrEqual(2048);
    expect(r.pulled).toBeLessThan(20);
  });
});
