import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';

/**
 * Keeps the latest chunk back until everything upstream finished without
 * error: the last byte is handed out only together with 'end'. A consumer
 * that sends exactly the bytes it got (an upload to Glance, chunked or with a
 * Content-Length) can therefore never complete with data that a check
 * upstream (a blob digest, a sha256 the manifest states) later refuses: a
 * failure always cuts the upload short, and Glance leaves the image `queued`
 * instead of `active` with wrong content. The one hold-back stream of the
 * project: the OCI disk source, the OCI upload and the URL upload use it.
 *
 * Small chunks can be gathered up to `chunkBytes` (memory stays two chunks):
 * fewer, larger HTTP chunks cost Glance (Python) less per byte. A subclass
 * may look at every chunk (`inspect`) and refuse the end (`check`): the held
 * chunk is then never handed out.
 */
export class HoldBackLast extends Transform {
  private held: Buffer | undefined;
  private gathering: Buffer[] = [];
  private gathered = 0;
  private sent = 0;
  private readonly onBytes: ((bytes: number) => void) | undefined;
  private readonly chunkBytes: number;

  constructor(onBytes?: (bytes: number) => void, chunkBytes = 0, options?: TransformOptions) {
    super(options);
    this.onBytes = onBytes;
    this.chunkBytes = chunkBytes;
  }

  /** Bytes handed out so far. */
  get bytes(): number {
    return this.sent;
  }

  /** Sees every chunk as it comes in (hashing). */
  protected inspect(_chunk: Buffer): void {}

  /** Called once upstream ended, before the held chunk goes out; an error withholds it. */
  protected check(): Error | undefined {
    return undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.inspect(chunk);
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
    if (previous) this.count(previous);
    return previous;
  }

  private count(chunk: Buffer): void {
    this.sent += chunk.length;
    this.onBytes?.(this.sent);
  }

  override _flush(callback: TransformCallback): void {
    if (this.gathered > 0) {
      const previous = this.rotate();
      if (previous) this.push(previous);
    }
    const refused = this.check();
    if (refused) {
      this.held = undefined;
      callback(refused);
      return;
    }
    if (this.held) {
      this.count(this.held);
      this.push(this.held);
      this.held = undefined;
    }
    callback();
  }
}
