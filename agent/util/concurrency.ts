/**
 * Runs `work` over items, at most `limit` at a time. After a failure no
 * item starts; the first failure is thrown once the items already started
 * have ended (a second failure meanwhile would otherwise be an unhandled
 * rejection, which ends a Node process, and the caller's clean-up would run
 * beside work still writing).
 */
export async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failure) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  if (failure) throw failure.error;
}

/** How dag() groups and places ready nodes. */
export interface DagLanes {
  /** Ready nodes with the same key (up to `maxBatch`) start together, in one turn, and share one slot. */
  batchOf?: (node: string) => string | undefined;
  maxBatch?: number;
  /** Each lane has `limit` slots of its own (one per OpenStack service): a queue of one service's work never holds back another's. Absent = one lane. */
  laneOf?: (node: string) => string;
}

/**
 * Runs every node once all of its dependencies have run, at most `limit` at a
 * time per lane. Ready nodes with the same `batchOf` key (up to `maxBatch`)
 * start together, in the same turn, and share one slot: their work is one
 * request (a bulk create), and one slot per object would both cut the bulk
 * into slot-sized pieces and leave the other slots idle while it runs.
 * Among ready nodes the one with the longest chain of dependents starts
 * first (the critical path: a network before a flavor, since subnets and
 * ports wait for it), then `order`'s order.
 */
export async function dag(
  order: readonly string[],
  deps: (node: string) => string[],
  limit: number,
  work: (node: string) => Promise<void>,
  lanes: DagLanes = {},
): Promise<void> {
  const waiting = new Map(order.map((n) => [n, new Set(deps(n))]));
  const dependents = new Map<string, string[]>();
  for (const [n, ds] of waiting) for (const d of ds) dependents.set(d, [...(dependents.get(d) ?? []), n]);
  const rank = priorities(order, dependents);
  const before = (a: string, b: string): boolean => rank.get(a)! < rank.get(b)!;
  const laneOf = lanes.laneOf ?? ((): string => '');
  const queues = new Map<string, string[]>();
  const running = new Map<string, number>();
  let total = 0;
  const enqueue = (n: string): void => {
    const lane = laneOf(n);
    let q = queues.get(lane);
    if (!q) queues.set(lane, (q = []));
    let lo = 0;
    let hi = q.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(q[mid]!, n)) lo = mid + 1;
      else hi = mid;
    }
    q.splice(lo, 0, n);
  };
  for (const n of order) if (waiting.get(n)!.size === 0) enqueue(n);
  await new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      for (const [lane, q] of queues) {
        while ((running.get(lane) ?? 0) < Math.max(1, limit) && q.length > 0) {
          const batch = [q.shift()!];
          const key = lanes.batchOf?.(batch[0]!);
          if (key !== undefined) {
            for (let i = 0; i < q.length && batch.length < (lanes.maxBatch ?? 1);) {
              if (lanes.batchOf!(q[i]!) === key) batch.push(...q.splice(i, 1));
              else i++;
            }
          }
          running.set(lane, (running.get(lane) ?? 0) + 1);
          total++;
          let left = batch.length;
          for (const n of batch) {
            work(n)
              .then(() => {
                if (--left === 0) {
                  running.set(lane, running.get(lane)! - 1);
                  total--;
                }
                for (const d of dependents.get(n) ?? []) {
                  const set = waiting.get(d)!;
                  set.delete(n);
                  if (set.size === 0) enqueue(d);
                }
                pump();
              })
              .catch(reject);
          }
        }
      }
      if (total === 0 && [...queues.values()].every((q) => q.length === 0)) resolve();
    };
    pump();
  });
}

/** Each node's place among ready nodes: the longest chain of dependents first, then `order`. */
function priorities(order: readonly string[], dependents: ReadonlyMap<string, string[]>): Map<string, number> {
  const height = new Map<string, number>();
  const opened = new Set<string>();
  // Depth-first without recursion (a chain of thousands would overflow the stack): a node's height once all its dependents have theirs.
  for (const root of order) {
    const stack: string[] = [root];
    while (stack.length > 0) {
      const n = stack.at(-1)!;
      const below = dependents.get(n) ?? [];
      if (height.has(n)) stack.pop();
      else if (!opened.has(n)) {
        opened.add(n);
        stack.push(...below.filter((d) => !opened.has(d)));
      } else {
        height.set(n, Math.max(-1, ...below.map((d) => height.get(d) ?? -1)) + 1);
        stack.pop();
      }
    }
  }
  const heightOf = (n: string): number => height.get(n) ?? 0;
  const index = new Map(order.map((n, i) => [n, i]));
  const sorted = [...order].sort((a, b) => heightOf(b) - heightOf(a) || index.get(a)! - index.get(b)!);
  return new Map(sorted.map((n, i) => [n, i]));
}

/** Runs what it is given at most some number at a time (limiter). */
export type Limiter = <T>(work: () => Promise<T>) => Promise<T>;

/** A function that runs what it is given at most `limit` at a time, the rest in order of arrival. */
export function limiter(limit: number): Limiter {
  let running = 0;
  const queue: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= Math.max(1, limit)) await new Promise<void>((resolve) => queue.push(resolve));
    running++;
    try {
      return await work();
    } finally {
      running--;
      queue.shift()?.();
    }
  };
}

/**
 * One limiter per key, made on first use: `limit` at a time for each key, keys independent.
 * Pass a WeakMap to key by objects that must not be kept alive by it (a cloud).
 */
export function limiterPerKey<K>(
  limit: number,
  store: { get(key: K): Limiter | undefined; set(key: K, value: Limiter): unknown } = new Map<K, Limiter>(),
): (key: K) => Limiter {
  return (key) => {
    let bound = store.get(key);
    if (!bound) store.set(key, (bound = limiter(limit)));
    return bound;
  };
}

const chains = new Map<string, Promise<unknown>>();

/** Runs `work` after every earlier call with the same key has settled (this process only). */
export async function serialised<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = chains.get(key) ?? Promise.resolve();
  const mine = before.then(work, work);
  const tail = mine.then(
    () => undefined,
    () => undefined,
  );
  chains.set(key, tail);
  void tail.then(() => {
    if (chains.get(key) === tail) chains.delete(key);
  });
  return mine;
}

/**
 * Promise.all that settles only once every piece has: the first failure (in
 * order) is thrown after the others ended, so no piece is still writing when
 * the caller cleans up after a failure (a chart still unpacking into a folder
 * being removed made `rm` fail with ENOTEMPTY, hiding the real error).
 */
export async function allSettledOrThrow<T>(pieces: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(pieces);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
