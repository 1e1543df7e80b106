import { describe, expect, it } from 'vitest';
import { allSettledOrThrow, dag, limiter, limiterPerKey, pool, type Limiter } from '../../agent/util/concurrency.ts';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('dag', () => {
  it('starts ready nodes of one batch key together, in one turn and one slot, and keeps the limit for the others', async () => {
    // n0..n5 share a batch key; a, b, c do not; d depends on n0.
    const order = ['a', 'n0', 'n1', 'b', 'n2', 'n3', 'c', 'n4', 'n5', 'd'];
    const deps = (n: string): string[] => (n === 'd' ? ['n0'] : []);
    const started: { node: string; turn: number }[] = [];
    let turn = 0;
    let running = 0;
    let peakOthers = 0;
    const timer = setInterval(() => turn++, 0);
    await dag(
      order,
      deps,
      2,
      async (n) => {
        started.push({ node: n, turn });
        const other = !n.startsWith('n');
        if (other) peakOthers = Math.max(peakOthers, ++running);
        await tick();
        await tick();
        if (other) running--;
      },
      { batchOf: (n) => (n.startsWith('n') ? 'nets' : undefined), maxBatch: 4 },
    );
    clearInterval(timer);
    expect(started.map((s) => s.node).sort()).toEqual([...order].sort());
    const nets = started.filter((s) => s.node.startsWith('n'));
    expect(nets).toHaveLength(6);
    // The first four nets started with the first pump (same turn), the other two together later: batches of at most maxBatch.
    const firstTurn = nets[0]!.turn;
    expect(nets.slice(0, 4).every((s) => s.turn === firstTurn)).toBe(true);
    expect(nets.slice(0, 4).map((s) => s.node)).toEqual(['n0', 'n1', 'n2', 'n3']);
    // Two slots: the first batch (on the critical path: d waits for n0) and `a`; never more than two non-batched nodes at once.
    expect(started[0]!.node).toBe('n0');
    expect(started[4]!.node).toBe('a');
    expect(peakOthers).toBeLessThanOrEqual(2);
    // A dependent of a batch member runs after it.
    expect(started.findIndex((s) => s.node === 'd')).toBeGreaterThan(started.findIndex((s) => s.node === 'n0'));
  });
});

describe('dag priorities and lanes', () => {
  it('starts the node with the longest chain of dependents first, then keeps the given order', async () => {
    // net -> sub -> port is the critical path; the flavors come first in `order` but wait for nothing.
    const order = ['flavor-0', 'flavor-1', 'net', 'sg', 'sub', 'port'];
    const deps: Record<string, string[]> = { sub: ['net'], port: ['sub', 'sg'] };
    const started: string[] = [];
    await dag(order, (n) => deps[n] ?? [], 1, async (n) => {
      started.push(n);
      await tick();
    });
    // Equal chains keep `order`: the port (nothing waits for it) comes after the flavors.
    expect(started).toEqual(['net', 'sg', 'sub', 'flavor-0', 'flavor-1', 'port']);
  });

  it("gives each lane its own slots: one lane's queue never holds back another's", async () => {
    const order = ['c0', 'c1', 'c2', 'c3', 'n0', 'n1'];
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    let peakAll = 0;
    const firstStart = new Map<string, number>();
    let step = 0;
    await dag(
      order,
      () => [],
      2,
      async (n) => {
        const lane = n[0]!;
        firstStart.set(n, step++);
        running.set(lane, (running.get(lane) ?? 0) + 1);
        peak.set(lane, Math.max(peak.get(lane) ?? 0, running.get(lane)!));
        peakAll = Math.max(peakAll, [...running.values()].reduce((a, b) => a + b, 0));
        for (let i = 0; i < 3; i++) await tick();
        running.set(lane, running.get(lane)! - 1);
      },
      { laneOf: (n) => n[0]! },
    );
    expect(peak).toEqual(new Map([['c', 2], ['n', 2]]));
    expect(peakAll).toBe(4);
    // The second lane started with the first pump, not after the first lane's queue drained.
    expect(firstStart.get('n0')).toBeLessThan(firstStart.get('c2')!);
  });
});

describe('limiter', () => {
  it('runs at most `limit` at a time and everything in the end', async () => {
    const bounded = limiter(3);
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        bounded(async () => {
          peak = Math.max(peak, ++running);
          await tick();
          running--;
          done.push(i);
        }),
      ),
    );
    expect(done.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBe(3);
  });
});

describe('limiterPerKey', () => {
  it('keeps the limit for each key on its own and hands the same limiter back for a key', async () => {
    const per = limiterPerKey<string>(2);
    expect(per('a')).toBe(per('a'));
    expect(per('a')).not.toBe(per('b'));
    const running = new Map<string, number>();
    const peak = new Map<string, number>();
    await Promise.all(
      ['a', 'b'].flatMap((key) =>
        Array.from({ length: 6 }, () =>
          per(key)(async () => {
            running.set(key, (running.get(key) ?? 0) + 1);
            peak.set(key, Math.max(peak.get(key) ?? 0, running.get(key)!));
            await tick();
            running.set(key, running.get(key)! - 1);
          }),
        ),
      ),
    );
    expect(Object.fromEntries(peak)).toEqual({ a: 2, b: 2 });
  });

  it('keys by object in a WeakMap given to it', () => {
    const store = new WeakMap<object, Limiter>();
    const per = limiterPerKey<object>(1, store);
    const cloud = {};
    const bound = per(cloud);
    expect(store.get(cloud)).toBe(bound);
  });
});

describe('pool', () => {
  it('starts no item after a failure and throws the first failure once the started items ended, a second failure included (no unhandled rejection)', async () => {
    const started: number[] = [];
    const ended: number[] = [];
    let release: () => void = () => undefined;
    const slow = new Promise<void>((r) => (release = r));
    const run = pool([0, 1, 2, 3, 4, 5], 2, async (i) => {
      started.push(i);
      if (i === 0) {
        await slow;
        ended.push(i);
        throw new Error('second failure');
      }
      await tick();
      ended.push(i);
      if (i === 1) throw new Error('first failure');
    });
    let settled = false;
    void run.catch(() => undefined).finally(() => (settled = true));
    for (let i = 0; i < 5; i++) await tick();
    // Item 1 failed; item 0 still runs: nothing new started, and the pool waits for item 0.
    expect(started).toEqual([0, 1]);
    expect(settled).toBe(false);
    release();
    await expect(run).rejects.toThrow('first failure');
    expect(ended).toEqual([1, 0]);
  });
});

describe('allSettledOrThrow', () => {
  it('throws the first failure only once every piece has ended (none is still working when the caller cleans up)', async () => {
    const ended: string[] = [];
    const slow = new Promise<string>((resolve) => setTimeout(() => {
      ended.push('slow');
      resolve('slow');
    }, 50));
    const failing = Promise.reject(new Error('first'));
    const alsoFailing = new Promise<string>((_, reject) => setTimeout(() => reject(new Error('second')), 10));
    await expect(allSettledOrThrow([slow, failing, alsoFailing])).rejects.toThrow('first');
    expect(ended).toEqual(['slow']);
    await expect(allSettledOrThrow([Promise.resolve(1), Promise.resolve(2)])).resolves.toEqual([1, 2]);
  });
});
