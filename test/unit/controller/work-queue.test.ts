import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../agent/controller/resources/work-queue.ts';

const opts = { debounceMs: 30, backoffBaseMs: 40, backoffMaxMs: 200, concurrency: 2, random: () => 0.5 };

describe('WorkQueue', () => {
  it('collapses adds inside the debounce window into one run', async () => {
    const runs: string[] = [];
    // A window far longer than the adds take, even on a loaded machine: nothing may run inside it.
    const q = new WorkQueue({ ...opts, debounceMs: 1000 }, (k) => {
      runs.push(k);
      return Promise.resolve();
    });
    for (let i = 0; i < 5; i++) q.add('team-a');
    q.add('team-b');
    await sleep(5);
    expect(runs).toEqual([]);
    await q.idle();
    expect(runs.sort()).toEqual(['team-a', 'team-b']);
  });

  it('runs the first change after a quiet window at once (the leading edge) and collapses the rest of the burst into one run after it', async () => {
    const runs: { leading: boolean; at: number }[] = [];
    const start = Date.now();
    let release: () => void = () => undefined;
    const q = new WorkQueue({ ...opts, debounceMs: 5_000, leadingMs: 5 }, (_k, run) => {
      runs.push({ leading: run.leading, at: Date.now() - start });
      // The first run stays busy while the rest of the burst arrives.
      return runs.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
    });
    q.add('ns');
    // Well inside the 5 s window: only the leading edge can have run it.
    for (let i = 0; i < 100 && runs.length === 0; i++) await sleep(20);
    expect(runs).toEqual([{ leading: true, at: expect.any(Number) as number }]);
    expect(runs[0]!.at).toBeLessThan(5_000);
    for (let i = 0; i < 5; i++) q.add('ns');
    release();
    await q.idle();
    // The burst: one more run, not five, and not on the leading edge (its objects may still be arriving).
    expect(runs.map((r) => r.leading)).toEqual([true, false]);
    expect(runs[1]!.at).toBeGreaterThanOrEqual(5_000);
  }, 20_000);

  it('debounces a change that follows another inside the window (no leading edge), and a requeue never takes the leading edge', async () => {
    const runs: boolean[] = [];
    const q = new WorkQueue({ ...opts, debounceMs: 300, leadingMs: 5 }, (_k, run) => {
      runs.push(run.leading);
      return Promise.resolve(runs.length === 2 ? 50 : undefined);
    });
    q.add('ns');
    await q.idle();
    const t0 = Date.now();
    q.add('ns');
    await q.idle();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    // The leading run, the debounced one, then its requeue (50 ms later): only the first was on the leading edge.
    expect(runs).toEqual([true, false, false]);
  });

  it('runs a key again after the delay its run answered, its slot free meanwhile (progress by requeue)', async () => {
    const order: string[] = [];
    let slowRuns = 0;
    // One slot: a key that held it while OpenStack worked would keep the other key out.
    const q = new WorkQueue({ ...opts, concurrency: 1 }, (k) => {
      order.push(k);
      if (k !== 'slow') return Promise.resolve();
      slowRuns++;
      return Promise.resolve(slowRuns < 3 ? 150 : undefined);
    });
    q.add('slow', 0);
    await sleep(20);
    q.add('fast', 0);
    await sleep(60);
    // The fast key ran while the slow one waited for its next look, not after it.
    expect(order).toEqual(['slow', 'fast']);
    await q.idle();
    expect(order).toEqual(['slow', 'fast', 'slow', 'slow']);
    expect(q.failuresOf('slow')).toBe(0);
  });

  it('never runs a key twice at once, and runs once more for a change that came while it ran', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const q = new WorkQueue(opts, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs++;
      await sleep(60);
      active--;
    });
    q.add('ns');
    await sleep(45); // running now
    q.add('ns');
    q.add('ns');
    await q.idle();
    expect(maxActive).toBe(1);
    expect(runs).toBe(2);
  });

  it('retries a failed key with a growing backoff and resets it after a success', async () => {
    const at: number[] = [];
    const start = Date.now();
    let calls = 0;
    const q = new WorkQueue(opts, () => {
      at.push(Date.now() - start);
      calls++;
      return calls <= 2 ? Promise.reject(new Error('OpenStack unavailable')) : Promise.resolve();
    });
    q.add('ns', 0);
    await sleep(20);
    expect(q.failuresOf('ns')).toBe(1);
    await q.idle();
    expect(calls).toBe(3);
    expect(q.failuresOf('ns')).toBe(0);
    // backoff 40 ms then 80 ms (random pinned to 0.5 = no jitter)
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(38);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(78);
  });

  it('runs at most `concurrency` keys at once', async () => {
    let active = 0;
    let maxActive = 0;
    const q = new WorkQueue({ ...opts, concurrency: 2 }, async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await sleep(30);
      active--;
    });
    for (const k of ['a', 'b', 'c', 'd', 'e']) q.add(k, 0);
    await q.idle();
    expect(maxActive).toBe(2);
  });

  it('runs a key added for a change before keys due only for the resync', async () => {
    const runs: string[] = [];
    const q = new WorkQueue({ ...opts, concurrency: 1 }, async (k) => {
      runs.push(k);
      await sleep(20);
    });
    q.add('busy', 0);
    await sleep(5); // `busy` holds the only slot
    q.add('resync-a', 0, true);
    q.add('resync-b', 0, true);
    q.add('changed', 0);
    await q.idle();
    expect(runs).toEqual(['busy', 'changed', 'resync-a', 'resync-b']);
  });

  it('a change to a key waiting for the resync makes it urgent again', async () => {
    const runs: string[] = [];
    const q = new WorkQueue({ ...opts, concurrency: 1 }, async (k) => {
      runs.push(k);
      await sleep(20);
    });
    q.add('busy', 0);
    await sleep(5);
    q.add('resync-a', 0, true);
    q.add('resync-b', 0, true);
    await sleep(5); // both due, behind `busy`
    q.add('resync-b', 0);
    await q.idle();
    expect(runs).toEqual(['busy', 'resync-b', 'resync-a']);
  });
});
