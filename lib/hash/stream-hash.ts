import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { KupenstackError } from '../errors.ts';

/**
 * A sha256/sha512 of a byte stream computed on a worker thread, so the main
 * thread only copies each chunk (memcpy, ~10 GB/s) while the hashing
 * (~1.7 GB/s with SHA-NI, a quarter of a pull's main-thread time when it was
 * done inline) runs beside the network and disk work. The bytes go through
 * a fixed shared ring (constant memory); a full ring makes `update` return a
 * promise, which is the stream's back-pressure. Small inputs are hashed
 * inline: a worker is not worth its start for them.
 */

export type HashAlgorithm = 'sha256' | 'sha512';

export interface StreamHash {
  /** Takes the chunk's bytes (copied at once, or once the promise settles: await it before handing the chunk on is not needed). */
  update(chunk: Uint8Array): Promise<void> | undefined;
  /** Hex digest of everything given; call once, after the last update settled. */
  digest(): Promise<string>;
  /** Gives up (an aborted stream): the worker goes back to the pool once it drained. */
  release(): void;
}

/** Inputs below this are hashed inline. */
export const offloadMinBytes = 8 << 20;
const ringBytes = 4 << 20;
/** Bytes the worker hashes before it frees them: the writer waits for at most this much. */
const stepBytes = 256 << 10;
const maxIdleWorkers = 2;
/** The writer wakes a sleeping worker only once this much is waiting (or at the end): a wake is a futex call and a context switch. */
const wakeBytes = 512 << 10;
// Control words (Int32 indexes): bytes in the ring; the writer's wake-up counter; the reader's; end of input; the worker sleeps.
const used = 0;
const wrote = 1;
const freed = 2;
const done = 3;
const sleeping = 4;

// Plain JS (no TypeScript): evaluated as is in the worker, from sources and from dist/ alike.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const ring = new Uint8Array(workerData.ring);
const control = new Int32Array(workerData.control);
const size = ring.length;
parentPort.on('message', (algorithm) => {
  const hash = createHash(algorithm);
  let at = 0;
  for (;;) {
    const seen = Atomics.load(control, ${wrote});
    const available = Atomics.load(control, ${used});
    if (available === 0) {
      if (Atomics.load(control, ${done}) === 1) break;
      // Announced before the last look: a writer that adds bytes after it sees the flag and wakes us.
      Atomics.store(control, ${sleeping}, 1);
      if (Atomics.load(control, ${used}) === 0 && Atomics.load(control, ${done}) === 0) Atomics.wait(control, ${wrote}, seen, 1000);
      Atomics.store(control, ${sleeping}, 0);
      continue;
    }
    const n = Math.min(available, ${stepBytes}, size - at);
    hash.update(ring.subarray(at, at + n));
    at = (at + n) % size;
    Atomics.sub(control, ${used}, n);
    Atomics.add(control, ${freed}, 1);
    Atomics.notify(control, ${freed});
  }
  Atomics.store(control, ${done}, 0);
  parentPort.postMessage(hash.digest('hex'));
});
`;

interface HashWorker {
  worker: Worker;
  /** A Buffer over the shared ring: Buffer#copy is a plain memcpy, TypedArray#set into shared memory a slower relaxed-atomic copy (15 % of a pull's main thread when it was used). */
  ring: Buffer;
  control: Int32Array;
  /** The current job's settlement (digest or failure). */
  settle?: (result: { hex: string } | { error: Error }) => void;
  broken?: Error;
}

const idle: HashWorker[] = [];

function startWorker(): HashWorker {
  const ring = new SharedArrayBuffer(ringBytes);
  const control = new SharedArrayBuffer(5 * Int32Array.BYTES_PER_ELEMENT);
  // Small heaps: the worker holds one Hash object; its input lives in the shared ring.
  const worker = new Worker(workerSource, { eval: true, workerData: { ring, control }, resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 8 } });
  const w: HashWorker = { worker, ring: Buffer.from(ring), control: new Int32Array(control) };
  const fail = (error: Error): void => {
    w.broken = error;
    const i = idle.indexOf(w);
    if (i >= 0) idle.splice(i, 1);
    w.settle?.({ error });
    w.settle = undefined;
  };
  worker.on('message', (hex: string) => {
    const settle = w.settle;
    w.settle = undefined;
    worker.unref();
    if (idle.length < maxIdleWorkers && !w.broken) idle.push(w);
    else void worker.terminate();
    settle?.({ hex });
  });
  worker.on('error', (err: unknown) => fail(new KupenstackError('hash.worker', `the hashing worker thread failed (${err instanceof Error ? err.message : String(err)}); the transfer is refused, try again`, { cause: err })));
  worker.on('exit', (code) => fail(new KupenstackError('hash.worker', `the hashing worker thread exited (code ${code}); the transfer is refused, try again`)));
  return w;
}

class InlineHash implements StreamHash {
  private readonly hash;

  constructor(algorithm: HashAlgorithm) {
    this.hash = createHash(algorithm);
  }

  update(chunk: Uint8Array): undefined {
    this.hash.update(chunk);
    return undefined;
  }

  digest(): Promise<string> {
    return Promise.resolve(this.hash.digest('hex'));
  }

  release(): void {}
}

class OffloadedHash implements StreamHash {
  private readonly w: HashWorker;
  private readonly result: Promise<{ hex: string } | { error: Error }>;
  private at = 0;
  private ended = false;

  constructor(algorithm: HashAlgorithm) {
    this.w = idle.pop() ?? startWorker();
    this.w.worker.ref();
    this.result = new Promise((resolve) => (this.w.settle = resolve));
    this.w.worker.postMessage(algorithm);
  }

  update(chunk: Uint8Array): Promise<void> | undefined {
    const rest = this.copy(chunk);
    return rest === undefined ? undefined : this.later(rest);
  }

  /** Copies what fits; answers what did not. */
  private copy(chunk: Uint8Array): Uint8Array | undefined {
    const { ring, control } = this.w;
    let offset = 0;
    while (offset < chunk.length) {
      const free = ring.length - Atomics.load(control, used);
      if (free === 0) return chunk.subarray(offset);
      const n = Math.min(free, chunk.length - offset, ring.length - this.at);
      Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).copy(ring, this.at, offset, offset + n);
      this.at = (this.at + n) % ring.length;
      offset += n;
      const waiting = Atomics.add(control, used, n) + n;
      if (waiting >= wakeBytes && Atomics.load(control, sleeping) === 1) this.wake();
    }
    return undefined;
  }

  /** The ring was full: wait for the worker to free some, as often as needed. */
  private async later(chunk: Uint8Array | undefined): Promise<void> {
    const { control } = this.w;
    while (chunk !== undefined) {
      if (this.w.broken) throw this.w.broken;
      const seen = Atomics.load(control, freed);
      if (Atomics.load(control, used) === this.w.ring.length) {
        const wait = Atomics.waitAsync(control, freed, seen, 1000);
        if (wait.async) await wait.value;
      }
      chunk = this.copy(chunk);
    }
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    Atomics.store(this.w.control, done, 1);
    this.wake();
  }

  private wake(): void {
    Atomics.add(this.w.control, wrote, 1);
    Atomics.notify(this.w.control, wrote);
  }

  async digest(): Promise<string> {
    this.end();
    const r = await this.result;
    if ('error' in r) throw r.error;
    return r.hex;
  }

  release(): void {
    this.end();
  }
}

/** A hash for a stream of `expectedBytes` (when known): on a worker for large streams, inline for small ones. */
export function streamHash(algorithm: HashAlgorithm, expectedBytes?: number): StreamHash {
  return expectedBytes !== undefined && expectedBytes < offloadMinBytes ? new InlineHash(algorithm) : new OffloadedHash(algorithm);
}
