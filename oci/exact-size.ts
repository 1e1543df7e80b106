import { Transform, type TransformCallback } from 'node:stream';
import { OciError } from './errors.ts';

/**
 * Passes a decompressed disk through and fails it, before its end, when it
 * is not exactly the size the manifest states (KubeVirt's io.kubevirt.disk.size:
 * a size without a digest). Longer fails at the first byte too many; shorter
 * at the end. Either way the consumer never sees 'end', so no upload completes.
 */
export class ExactSize extends Transform {
  private readonly expected: number;
  private readonly what: string;
  bytes = 0;

  constructor(expected: number, what: string) {
    super();
    this.expected = expected;
    this.what = what;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.expected) {
      callback(new OciError('oci.size-mismatch', `${this.what} is longer than the ${this.expected} bytes its size annotation states; refused`));
      return;
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.bytes !== this.expected) {
      callback(new OciError('oci.size-mismatch', `${this.what} is ${this.bytes} bytes, not the ${this.expected} its size annotation states; refused`));
      return;
    }
    callback();
  }
}
