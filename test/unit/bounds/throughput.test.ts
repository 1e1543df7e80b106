import { pipeline } from 'node:stream/promises';
import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ThroughputGuard, type ThroughputBreach } from '../../../lib/stream/throughput.ts';

/** A source that sends `chunks` of `size` bytes, one every `everyMs`. */
function drip(chunks: number, size: number, everyMs: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === chunks) return void this.push(null);
      sent++;
      setTimeout(() => this.push(Buffer.alloc(size)), everyMs);
    },
  });
}

const sink = (): Writable => new Writable({ write: (_c, _e, done) => done() });

async function breachOf(source: Readable, guard: ThroughputGuard, breaches: ThroughputBreach[]): Promise<string> {
  const err = await pipeline(source, guard, sink()).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(breaches).toHaveLength(1);
  return (err as Error).message;
}

describe('a download bounded by rate and deadline', () => {
  it('a source dripping a byte at a time gives up after its first window, not at its end', async () => {
    const breaches: ThroughputBreach[] = [];
    const guard = new ThroughputGuard({ minBytesPerSecond: 1000, windowMs: 200, deadlineMs: 60_000 }, (b) => {
      breaches.push(b);
      return new Error(`too slow: ${b.kind}`);
    });
    const started = Date.now();
    expect(await breachOf(drip(1000, 1, 50), guard, breaches)).toBe('too slow: rate');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(breaches[0]).toMatchObject({ kind: 'rate' });
  });

  it('a source that sends nothing at all fails on the clock', async () => {
    const breaches: ThroughputBreach[] = [];
    const guard = new ThroughputGuard({ minBytesPerSecond: 10, windowMs: 100, deadlineMs: 60_000 }, (b) => {
      breaches.push(b);
      return new Error(b.kind);
    });
    const silent = new Readable({ read: () => undefined });
    expect(await breachOf(silent, guard, breaches)).toBe('rate');
  });

  it('a fast source that goes on too long meets the deadline', async () => {
    const breaches: ThroughputBreach[] = [];
    const guard = new ThroughputGuard({ minBytesPerSecond: 1, windowMs: 50, deadlineMs: 150 }, (b) => {
      breaches.push(b);
      return new Error(b.kind);
    });
    expect(await breachOf(drip(100, 1024, 10), guard, breaches)).toBe('deadline');
    expect(breaches[0]).toMatchObject({ kind: 'deadline' });
  });

  it('a source within both bounds passes every byte', async () => {
    const guard = new ThroughputGuard({ minBytesPerSecond: 1000, windowMs: 100, deadlineMs: 5_000 }, (b) => new Error(b.kind));
    let bytes = 0;
    await pipeline(
      drip(20, 4096, 5),
      guard,
      new Writable({
        write: (c: Buffer, _e, done) => {
          bytes += c.length;
          done();
        },
      }),
    );
    expect(bytes).toBe(20 * 4096);
  });
});
