import { Transform, type TransformCallback } from 'node:stream';

/**
 * Counts the bytes that flow to Glance and keeps the latest chunk back until
 * the source ends. The OCI source only ends after the blob digest verified;
 * holding the last chunk means that even a Content-Length upload can never
 * be complete before that: a failure always cuts the upload short, and Glance
 * leaves the image `queued` instead of `active` with wrong content.
 */
export class HoldBackLast extends Transform {
  private held: Buffer | undefined;
  bytes = 0;
  private readonly onBytes: ((bytes: number) => void) | undefined;

  constructor(onBytes?: (bytes: number) => void) {
    super();
    this.onBytes = onBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const previous = this.held;
    this.held = chunk;
    if (previous) {
      this.bytes += previous.length;
      this.onBytes?.(this.bytes);
    }
    callback(null, previous);
  }

  override _flush(callback: TransformCallback): void {
    if (this.held) {
      this.bytes += this.held.length;
      this.onBytes?.(this.bytes);
      this.push(this.held);
      this.held = undefined;
    }
    callback();
  }
}
