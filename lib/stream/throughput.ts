import { Transform, type TransformCallback } from 'node:stream';

/**
 * A download's two bounds, watched as the bytes flow: at least `minBytesPerSecond`
 * over every window of `windowMs` (a source dripping a byte every 50 s keeps an
 * idle timeout happy, not this), and done within `deadlineMs` in all. The clock
 * runs from construction, so a source that sends nothing at all fails too. On a
 * breach the stream fails with what `fail` makes of it; the pipeline's other
 * stages (the upload reading it) fail with it.
 */
export interface ThroughputLimits {
  minBytesPerSecond: number;
  windowMs: number;
  deadlineMs: number;
}

export type ThroughputBreach = { kind: 'rate'; bytesPerSecond: number; windowMs: number } | { kind: 'deadline'; elapsedMs: number; bytes: number };

export class ThroughputGuard extends Transform {
  private readonly limits: ThroughputLimits;
  private readonly fail: (breach: ThroughputBreach) => Error;
  private readonly started = Date.now();
  private windowStart = this.started;
  private windowBytes = 0;
  private bytes = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(limits: ThroughputLimits, fail: (breach: ThroughputBreach) => Error) {
    super();
    this.limits = limits;
    this.fail = fail;
    // Checked on a clock, not only per chunk: a stalled source sends no chunk to check on.
    this.timer = setInterval(() => this.checkNow(), Math.max(50, Math.min(1000, limits.windowMs / 4)));
    this.timer.unref();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    this.windowBytes += chunk.length;
    const breach = this.breach(Date.now());
    if (breach) done(this.fail(breach));
    else done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    clearInterval(this.timer);
    done();
  }

  override _destroy(err: Error | null, done: (error?: Error | null) => void): void {
    clearInterval(this.timer);
    done(err);
  }

  private checkNow(): void {
    const breach = this.breach(Date.now());
    if (breach) this.destroy(this.fail(breach));
  }

  /** The first bound broken at `now`, else undefined; a full window that met the rate starts the next one. */
  private breach(now: number): ThroughputBreach | undefined {
    const elapsedMs = now - this.started;
    if (elapsedMs > this.limits.deadlineMs) return { kind: 'deadline', elapsedMs, bytes: this.bytes };
    const windowMs = now - this.windowStart;
    if (windowMs < this.limits.windowMs) return undefined;
    const bytesPerSecond = (this.windowBytes * 1000) / windowMs;
    if (bytesPerSecond < this.limits.minBytesPerSecond) return { kind: 'rate', bytesPerSecond, windowMs };
    this.windowStart = now;
    this.windowBytes = 0;
    return undefined;
  }
}
