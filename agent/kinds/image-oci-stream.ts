import { Transform, type TransformCallback } from 'node:stream';

/** Chunks to Glance are gathered to this size: fewer, larger HTTP chunks cost Glance (Python) less per byte. */
export const uploadChunkBytes = 1024 * 1024;

/**
 * Counts the bytes that flow to Glance and keeps the latest chunk back until
 * the source ends. The OCI source only ends after the blob digest verified;
 * holding the last chunk means that even a Content-Length upload can never
 * be complete before that: a failure always cuts the upload short, and Glance
 * leaves the image `queued` instead of `active` with wrong content.
 * Small chunks are gathered up to `chunkBytes` (memory stays two chunks).
 */
export class HoldBackLast extends Transform {
  private held: Buffer | undefined;
  private gathering: Buffer[] = [];
  private gathered = 0;
  bytes = 0;
  private readonly onBytes: ((bytes: number) => void) | undefined;
  private readonly chunkBytes: number;

  constructor(onBytes?: (bytes: number) => void, chunkBytes = 0) {
    super();
    this.onBytes = onBytes;
    this.chunkBytes = chunkBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.gathering.push(chunk);
    this.gathered += chunk.length;
    if (this.gathered < this.chunkBytes) return callback();
    callback(null, this.rotate());
  }

  /** The gathered bytes become the held chunk; the one held before is handed out. */
  private rotate(): Buffer | undefined {
    const next = this.gathering.length === 1 ? this.gathering[0]! : Buffer.concat(this.gathering, this.gathered);
    this.gathering = [];
    this.gathered = 0;
    const previous = this.held;
    this.held = next;
    if (previous) {
      this.bytes += previous.length;
      this.onBytes?.(this.bytes);
    }
    return previous;
  }

  override _flush(callback: TransformCallback): void {
    if (this.gathered > 0) {
      const previous = this.rotate();
      if (previous) this.push(previous);
    }
    if (this.held) {
      this.bytes += this.held.length;
      this.onBytes?.(this.bytes);
      this.push(this.held);
      this.held = undefined;
    }
    callback();
  }
}
