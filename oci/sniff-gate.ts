import { Transform, type TransformCallback } from 'node:stream';
import { OciError } from './errors.ts';
import { formatsAgree, sniffBytes, sniffDiskFormat } from '../lib/disk/sniff.ts';

/**
 * Holds the first 64 KiB of a disk stream, sniffs them, and only then lets
 * bytes through: a disk that is not what the manifest declares (or a qcow2
 * pointing outside itself) is refused before its first byte is handed out.
 * `format` settles with the decision.
 */
export class SniffGate extends Transform {
  readonly format: Promise<string>;
  private resolveFormat!: (f: string) => void;
  private rejectFormat!: (e: Error) => void;
  private readonly declared: string | undefined;
  private readonly where: string;
  private head: Buffer[] = [];
  private headLength = 0;
  private decided = false;

  constructor(declared: string | undefined, where: string) {
    super();
    this.declared = declared;
    this.where = where;
    this.format = new Promise<string>((resolve, reject) => {
      this.resolveFormat = resolve;
      this.rejectFormat = reject;
    });
    // Rejections are delivered through the stream's 'error' as well.
    this.format.catch(() => undefined);
  }

  private decide(): Error | undefined {
    this.decided = true;
    const head = Buffer.concat(this.head);
    let sniffed: string;
    try {
      sniffed = sniffDiskFormat(head);
    } catch (err) {
      this.rejectFormat(err as Error);
      return err as Error;
    }
    if (this.declared !== undefined && !formatsAgree(this.declared, sniffed)) {
      const err = new OciError(
        'oci.format-mismatch',
        `${this.where}: the manifest declares a ${this.declared} disk but its bytes are ${sniffed}; fix the layer media type (application/vnd.diskimage.${sniffed}) or push the right file`,
      );
      this.rejectFormat(err);
      return err;
    }
    this.resolveFormat(sniffed);
    for (const c of this.head) this.push(c);
    this.head = [];
    return undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.decided) {
      callback(null, chunk);
      return;
    }
    this.head.push(chunk);
    this.headLength += chunk.length;
    callback(this.headLength >= sniffBytes ? this.decide() : undefined);
  }

  override _flush(callback: TransformCallback): void {
    callback(this.decided ? undefined : this.decide());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.decided) {
      this.decided = true;
      this.rejectFormat(error ?? new OciError('oci.truncated', `${this.where}: the stream closed before the disk's first bytes arrived`));
    }
    callback(error);
  }
}

/** Fails a stream that grows beyond `limit` bytes. */
export class ByteLimit extends Transform {
  private readonly limit: number;
  private readonly where: string;
  /** The caller's error for a disk over the limit (its bound's words); default an `oci.too-large` OciError. */
  private readonly tooLarge: ((bytes: number) => Error) | undefined;
  bytes = 0;

  constructor(limit: number, where: string, tooLarge?: (bytes: number) => Error) {
    super();
    this.limit = limit;
    this.where = where;
    this.tooLarge = tooLarge;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) {
      if (this.tooLarge) return callback(this.tooLarge(this.bytes));
      callback(
        new OciError(
          'oci.too-large',
          `${this.where}: the disk is larger than the limit of ${this.limit} bytes; refused (raise the limit if this disk is expected)`,
        ),
      );
      return;
    }
    callback(null, chunk);
  }
}
