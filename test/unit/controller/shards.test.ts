import { ApiException, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { heldPreferredAnnotation, LeaderElector, wantedByAnnotation } from '../../../agent/controller/leases/leader.ts';
import { ShardSet } from '../../../agent/controller/leases/shard-set.ts';
import { mayAcquire, parseShards, preferredShard, shardLeaseName, shardOf } from '../../../agent/controller/leases/shards.ts';
import { UsageError } from '../../../agent/errors.ts';

describe('shard selection', () => {
  it('a namespace is in the shard its label names, else in the default shard', () => {
    expect(shardOf({ 'kupenstack.io/shard': 'b' }, 'a')).toBe('b');
    expect(shardOf({ 'kupenstack.io/project': 'enabled' }, 'a')).toBe('a');
    expect(shardOf({ 'kupenstack.io/shard': '' }, 'a')).toBe('a');
    expect(shardOf(undefined, 'default')).toBe('default');
  });

  it('--shards is checked and deduplicated; a bad name says what a shard name may be', () => {
    expect(parseShards('a, b,c,a')).toEqual(['a', 'b', 'c']);
    expect(() => parseShards('')).toThrow(UsageError);
    expect(() => parseShards('a,B')).toThrow(/--shards B: a shard name is 1–40 lower-case letters/);
    expect(() => parseShards('a,-x')).toThrow(UsageError);
    expect(shardLeaseName('kupenstack-controller', 'b')).toBe('kupenstack-controller-shard-b');
  });

  it('the preferred shard: the flag, else the StatefulSet ordinal modulo the shards, else none', () => {
    const shards = ['a', 'b', 'c'];
    expect(preferredShard(shards, { preferred: 'c', podName: 'kupenstack-controller-0' })).toBe('c');
    expect(() => preferredShard(shards, { preferred: 'd' })).toThrow(/--preferred-shard d: not one of --shards a,b,c/);
    expect(['kupenstack-controller-0', 'kupenstack-controller-1', 'kupenstack-controller-2', 'kupenstack-controller-3'].map((podName) => preferredShard(shards, { podName }))).toEqual(['a', 'b', 'c', 'a']);
    expect(preferredShard(shards, { podName: 'kupenstack-controller-7d9f8b6c5-xk2lp' })).toBeUndefined();
    expect(preferredShard(shards, {})).toBeUndefined();
  });

  it('a replica takes its preferred shard at once and the others only after the grace period', () => {
    expect(mayAcquire('a', 'a', 0, 15_000)).toBe(true);
    expect(mayAcquire('b', 'a', 0, 15_000)).toBe(false);
    expect(mayAcquire('b', 'a', 14_999, 15_000)).toBe(false);
    expect(mayAcquire('b', 'a', 15_000, 15_000)).toBe(true);
    // Without a preference every shard is contended at once, as a single Lease would be.
    expect(mayAcquire('b', undefined, 0, 15_000)).toBe(true);
  });
});

/**
 * An in-memory coordination.k8s.io Lease store with the API server's
 * compare-and-swap on resourceVersion, so the electors' protocol (spread,
 * hand-back, takeover) runs on a simulated clock. The real API server is in
 * test/integration/controller/sharding.test.ts.
 */
class LeaseStore {
  readonly leases = new Map<string, V1Lease>();
  private version = 0;

  api(): CoordinationV1Api {
    const api = {
      readNamespacedLease: ({ name }: { name: string }): Promise<V1Lease> => {
        const l = this.leases.get(name);
        return l ? Promise.resolve(structuredClone(l)) : Promise.reject(new ApiException(404, 'not found', {}, {}));
      },
      createNamespacedLease: ({ body }: { body: V1Lease }): Promise<V1Lease> => {
        const name = body.metadata!.name!;
        if (this.leases.has(name)) return Promise.reject(new ApiException(409, 'exists', {}, {}));
        this.leases.set(name, { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
        return Promise.resolve(structuredClone(this.leases.get(name)!));
      },
      replaceNamespacedLease: ({ name, body }: { name: string; body: V1Lease }): Promise<V1Lease> => {
        if (this.leases.get(name)?.metadata?.resourceVersion !== body.metadata?.resourceVersion) return Promise.reject(new ApiException(409, 'conflict', {}, {}));
        this.leases.set(name, { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
        return Promise.resolve(structuredClone(this.leases.get(name)!));
      },
    };
    return api as unknown as CoordinationV1Api;
  }
}

/** Fake timers drive the electors' retry loops; `now` is the simulated clock. */
async function advance(ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    await vi.advanceTimersByTimeAsync(step);
  }
}

describe('ShardSet: three replicas, three shards', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const timings = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000, graceMs: 4_000 };
  function replica(store: LeaseStore, preferred: string, events: string[]): ShardSet {
    return new ShardSet({ coordination: store.api(), namespace: 'kupenstack-system', leasePrefix: 'ks', shards: ['a', 'b', 'c'], preferred, identity: `r-${preferred}`, ...timings, now: () => Date.now(), onGained: (s) => events.push(`${preferred} gained ${s}`), onLost: (s) => events.push(`${preferred} lost ${s}`) });
  }

  /** Three replicas started together, each preferring its own shard, once they settled. */
  async function spreadThree(): Promise<{ store: LeaseStore; events: string[]; set: ShardSet[] }> {
    const store = new LeaseStore();
    const events: string[] = [];
    const set = ['a', 'b', 'c'].map((p) => replica(store, p, events));
    for (const r of set) r.start();
    await advance(10_000);
    expect(set.map((r) => r.held())).toEqual([['a'], ['b'], ['c']]);
    return { store, events, set };
  }

  it('started together, each holds its preferred shard only', async () => {
    const { store, events } = await spreadThree();
    expect(events.sort()).toEqual(['a gained a', 'b gained b', 'c gained c']);
    expect(store.leases.get('ks-shard-b')?.metadata?.annotations?.[heldPreferredAnnotation]).toBe('true');
  });

  it('a replica started late gets its shard handed back; the giver stops acting before the taker starts', async () => {
    const store = new LeaseStore();
    const events: string[] = [];
    const first = replica(store, 'a', events);
    first.start();
    await advance(8_000);
    // Alone past the grace period: it serves every shard.
    expect(first.held()).toEqual(['a', 'b', 'c']);
    const late = replica(store, 'b', events);
    late.start();
    await advance(6_000);
    expect(first.held()).toEqual(['a', 'c']);
    expect(late.held()).toEqual(['b']);
    expect(events.indexOf('a lost b')).not.toBe(-1);
    expect(events.indexOf('a lost b')).toBeLessThan(events.indexOf('b gained b'));
    expect(store.leases.get('ks-shard-b')?.metadata?.annotations?.[wantedByAnnotation]).toBeUndefined();
    // The handed-over Lease is now renewed by its preferred holder: nothing moves any more.
    await advance(10_000);
    expect([first.held(), late.held()]).toEqual([['a', 'c'], ['b']]);
  });

  it('a dead replica\'s shard is taken over by a survivor within the lease duration, and only by one', async () => {
    const { set } = await spreadThree();
    // kill -9: its electors' timers stop and nothing is released (private fields: a process has no other way to vanish mid-lease).
    (set[1] as unknown as { electors: Map<string, { stopped: boolean; timer?: NodeJS.Timeout }> }).electors.forEach((e) => {
      e.stopped = true;
      clearTimeout(e.timer);
    });
    const killed = Date.now();
    let takenAt = 0;
    while (takenAt === 0 && Date.now() - killed < 20_000) {
      await advance(100);
      if (set[0]!.holds('b') || set[2]!.holds('b')) takenAt = Date.now();
    }
    expect(takenAt - killed).toBeGreaterThan(0);
    // A survivor counts the lease duration from when it last SAW the renew (up to one jittered retry period after it), then acquires at its next poll (one more).
    expect(takenAt - killed).toBeLessThanOrEqual(timings.leaseDurationMs + 2 * timings.retryPeriodMs * 1.2 + 200);
    expect([set[0]!.holds('b'), set[2]!.holds('b')].filter(Boolean)).toHaveLength(1);
  });
});

describe('LeaderElector: the renew deadline (audit W6, M12)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('isLeader() is false as soon as the renew deadline has passed, before the next tick demotes it', async () => {
    const store = new LeaseStore();
    const stopped: number[] = [];
    // The clock the elector reads is ours: it moves without letting its timers run (a process frozen between ticks, a partition).
    let clock = Date.now();
    const elector = new LeaderElector({ coordination: store.api(), namespace: 'kupenstack-system', name: 'ks', identity: 'r-1', leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000, now: () => clock, onStoppedLeading: () => stopped.push(clock) });
    elector.start();
    for (let i = 0; i < 20 && !elector.isLeader(); i++) {
      clock += 100;
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(elector.isLeader()).toBe(true);
    const renewed = clock;
    clock = renewed + 2_999;
    expect(elector.isLeader()).toBe(true);
    clock = renewed + 3_001;
    // No timer ran since: only the synchronous check can say it.
    expect(elector.isLeader()).toBe(false);
    expect(stopped).toEqual([renewed + 3_001]);
    await elector.stop();
  });
});
