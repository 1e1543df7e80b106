/** Runs `work` over items, at most `limit` at a time. */
export async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
}

/**
 * Runs every node once all of its dependencies have run, at most `limit` at a
 * time. Ready nodes with the same `batchOf` key (up to `maxBatch`) start
 * together, in the same turn, and share one slot: their work is one request
 * (a bulk create), and one slot per object would both cut the bulk into
 * slot-sized pieces and leave the other slots idle while it runs.
 */
export async function dag(order: readonly string[], deps: (node: string) => string[], limit: number, work: (node: string) => Promise<void>, batching?: { batchOf: (node: string) => string | undefined; maxBatch: number }): Promise<void> {
  const waiting = new Map(order.map((n) => [n, new Set(deps(n))]));
  const dependents = new Map<string, string[]>();
  for (const [n, ds] of waiting) for (const d of ds) dependents.set(d, [...(dependents.get(d) ?? []), n]);
  const ready = order.filter((n) => waiting.get(n)!.size === 0);
  let running = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      if (ready.length === 0 && running === 0) return resolve();
      while (running < limit && ready.length > 0) {
        const batch = [ready.shift()!];
        const key = batching?.batchOf(batch[0]!);
        if (key !== undefined) {
          for (let i = 0; i < ready.length && batch.length < batching!.maxBatch; ) {
            if (batching!.batchOf(ready[i]!) === key) batch.push(...ready.splice(i, 1));
            else i++;
          }
        }
        running++;
        let left = batch.length;
        for (const n of batch) {
          work(n)
            .then(() => {
              if (--left === 0) running--;
              for (const d of dependents.get(n) ?? []) {
                const set = waiting.get(d)!;
                set.delete(n);
                if (set.size === 0) ready.push(d);
              }
              pump();
            })
            .catch(reject);
        }
      }
    };
    pump();
  });
}

/** A function that runs what it is given at most `limit` at a time, the rest in order of arrival. */
export function limiter(limit: number): <T>(work: () => Promise<T>) => Promise<T> {
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

/** Consecutive runs of items with the same key. */
export function groupRuns<T>(items: readonly T[], key: (t: T) => string): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let last: string | undefined;
  for (const item of items) {
    const k = key(item);
    if (k !== last && current.length) {
      groups.push(current);
      current = [];
    }
    current.push(item);
    last = k;
  }
  if (current.length) groups.push(current);
  return groups;
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
