import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { OciError } from './errors.ts';

/** Content digests (`sha256:<hex>`, `sha512:<hex>`): parsing, hashing, streaming verification. */

export type DigestAlgorithm = 'sha256' | 'sha512';

export function parseDigest(digest: string): { algorithm: DigestAlgorithm; hex: string } {
  const m = /^(sha256|sha512):([a-f0-9]+)$/.exec(digest);
  if (!m || m[2]!.length !== (m[1] === 'sha256' ? 64 : 128)) {
    throw new OciError('oci.digest', `"${digest}" is not a sha256 or sha512 digest`);
  }
  return { algorithm: m[1] as DigestAlgorithm, hex: m[2]! };
}

export function newHash(digest: string): Hash {
  return createHash(parseDigest(digest).algorithm);
}

export function sha256Of(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** Checks a whole (small) body such as a manifest against the digest it was asked for. */
export function verifyBuffer(body: Buffer, expected: string, what: string): void {
  const actual = `${parseDigest(expected).algorithm}:${newHash(expected).update(body).digest('hex')}`;
  if (actual !== expected) {
    throw new OciError(
      'oci.digest',
      `${what} hashes to ${actual}, not ${expected}: the registry served other bytes than the digest names (corrupted storage or a tampering proxy); nothing was used`,
    );
  }
}

/**
 * Hashes what flows through and fails at the end when the digest (and byte
 * count, when known) do not match, so a consumer never sees 'end' for bad
 * bytes. Used for decompressed streams whose digest an annotation states.
 */
export class VerifyingStream extends Transform {
  private readonly hash: Hash;
  private readonly expected: string;
  private readonly expectedSize: number | undefined;
  private readonly what: string;
  bytes = 0;

  constructor(expected: string, what: string, expectedSize?: number) {
    super();
    this.hash = newHash(expected);
    this.expected = expected;
    this.expectedSize = expectedSize;
    this.what = what;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.expectedSize !== undefined && this.bytes > this.expectedSize) {
      callback(new OciError('oci.too-large', `${this.what} is longer than the ${this.expectedSize} bytes its descriptor states; refused`));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.expectedSize !== undefined && this.bytes !== this.expectedSize) {
      callback(new OciError('oci.truncated', `${this.what} ended after ${this.bytes} of ${this.expectedSize} bytes`));
      return;
    }
    const actual = `${parseDigest(this.expected).algorithm}:${this.hash.digest('hex')}`;
    if (actual !== this.expected) {
      callback(new OciError('oci.digest', `${this.what} hashes to ${actual}, not ${this.expected}; refused`));
      return;
    }
    callback();
  }
}
