/**
 * Slabs of memory that a socket reader fills and hands on in pieces, and that
 * come back for the next reads once every piece was given back: a pull that
 * ends in a socket write (the Glance upload) then moves its bytes through the
 * same few MiB, not 1 GiB of buffers for the collector (whose pace, with few
 * JavaScript objects per MiB, let dead slabs reach 60 MB above the baseline).
 *
 * The rule that keeps it safe: `release` is called only by the last holder of
 * a piece, once nothing reads it any more (a socket writer, in the callback
 * of its write). A piece never released (a consumer that keeps it, copies it,
 * or fails) leaves its slab to the collector, as any buffer: it is only not
 * reused. A piece released twice counts once.
 */

interface Slab {
  /** Pieces handed out and not given back. */
  out: number;
  /** The reader moved on: no more pieces come from it. */
  retired: boolean;
}

export class SlabPool {
  readonly slabBytes: number;
  private readonly maxFree: number;
  private readonly free: Buffer[] = [];
  private readonly slabs = new WeakMap<ArrayBuffer, Slab>();
  private readonly pieces = new WeakSet<Buffer>();
  /** Slabs taken from the free list instead of allocated (tests, benchmarks). */
  reused = 0;

  constructor(slabBytes: number, maxFree: number) {
    this.slabBytes = slabBytes;
    this.maxFree = maxFree;
  }

  /** An empty slab for a reader to fill. */
  take(): Buffer {
    const slab = this.free.pop();
    if (slab) this.reused++;
    const taken = slab ?? Buffer.allocUnsafeSlow(this.slabBytes);
    this.slabs.set(taken.buffer as ArrayBuffer, { out: 0, retired: false });
    return taken;
  }

  /** `piece`, a view of a taken slab, goes to a consumer. */
  handOut(piece: Buffer): Buffer {
    const slab = this.slabs.get(piece.buffer as ArrayBuffer);
    if (slab) {
      slab.out++;
      this.pieces.add(piece);
    }
    return piece;
  }

  /** The reader is done with `slab` (full, or the body ended or failed). */
  retire(slab: Buffer): void {
    const s = this.slabs.get(slab.buffer as ArrayBuffer);
    if (!s || s.retired) return;
    s.retired = true;
    this.recycle(slab.buffer as ArrayBuffer, s);
  }

  /** The last holder of `piece` is done with it; any other buffer is ignored. */
  release(piece: Buffer): void {
    if (!this.pieces.delete(piece)) return;
    const s = this.slabs.get(piece.buffer as ArrayBuffer);
    if (!s) return;
    s.out--;
    this.recycle(piece.buffer as ArrayBuffer, s);
  }

  private recycle(buffer: ArrayBuffer, s: Slab): void {
    if (!s.retired || s.out > 0) return;
    this.slabs.delete(buffer);
    if (this.free.length < this.maxFree) this.free.push(Buffer.from(buffer, 0, this.slabBytes));
  }
}

/** The process's pool: 1 MiB slabs (16 socket reads of 64 KiB), up to 8 kept idle. */
export const slabPool = new SlabPool(1 << 20, 8);
