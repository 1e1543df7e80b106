import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

/**
 * Issue 33, OCI figures that hold still: ours and the peer's runs
 * interleaved (A B A B …, at least 5 each), each pair's ratio, and the
 * 1-minute load average around each pair. A row is judged on the median
 * ratio, printed with its spread; a row whose load went over `maxLoad` is
 * run again (up to twice) and the calmest attempt is kept.
 */
export interface Rounds {
  /** Milliseconds of each of our runs, in order. */
  ours: number[];
  theirs: number[];
  /** The 1-minute load average before the first pair and after each pair. */
  load: number[];
  /** How many attempts the row took (1 when the load stayed under the limit). */
  attempts: number;
}

export const minRounds = Number(process.env.BENCH_ROUNDS ?? '5');
/** Over this the row is rerun: the cores plus half a core of noise (2 cores here). */
export const maxLoad = Number(process.env.BENCH_MAX_LOAD ?? '2.5');

/** Milliseconds `f` took; a side that measures itself (a child process's own clock, without its start) returns its milliseconds instead. */
export async function timed(f: () => unknown): Promise<number> {
  const t0 = performance.now();
  const own: unknown = await f();
  return typeof own === 'number' ? own : performance.now() - t0;
}

export interface RoundOptions {
  /** Pairs per attempt (default BENCH_ROUNDS, 5). */
  pairs?: number;
  /**
   * Run before each side's run, off the clock: `sync`, so the dirty pages the
   * previous run wrote (a pulled file, Glance's store) are not written back
   * during the next one and charged to whichever side runs then.
   */
  settle?: () => unknown;
  /** Over this 1-minute load the row is rerun (default BENCH_MAX_LOAD). */
  maxLoad?: number;
}

/** The settle the OCI rows use: `sync`, so the last round's writes reach the disk before the next round's clock starts. */
export const flushWrites = (): void => void execFileSync('sync');

async function once(n: number, ours: () => unknown, theirs: () => unknown, settle: () => unknown): Promise<Omit<Rounds, 'attempts'>> {
  const r: Omit<Rounds, 'attempts'> = { ours: [], theirs: [], load: [loadavg()[0]!] };
  for (let i = 0; i < n; i++) {
    await settle();
    r.ours.push(await timed(ours));
    await settle();
    r.theirs.push(await timed(theirs));
    r.load.push(loadavg()[0]!);
  }
  return r;
}

export async function interleaved(ours: () => unknown, theirs: () => unknown, options: RoundOptions = {}): Promise<Rounds> {
  const n = options.pairs ?? minRounds;
  const settle = options.settle ?? ((): void => undefined);
  const limit = options.maxLoad ?? maxLoad;
  let best: Omit<Rounds, 'attempts'> | undefined;
  let attempts = 0;
  while (attempts < 3) {
    attempts++;
    const r = await once(Math.max(n, 1), ours, theirs, settle);
    if (!best || Math.max(...r.load) < Math.max(...best.load)) best = r;
    if (Math.max(...r.load) <= limit) break;
  }
  return { ...best!, attempts };
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Per pair: how fast ours ran beside the peer's run next to it (peer ms ÷ our ms: above 1, ours is faster). */
export function pairRatios(r: Rounds): number[] {
  return r.ours.map((o, i) => r.theirs[i]! / o);
}

/** Each row's median ratio by its key, as `describe` computed them in this process (repeatability.ts compares runs with them). */
export const ratiosOfThisRun = new Map<string, number>();

/** The median ratio and its spread, as printed in a row: "0.93× (0.88–0.97 over 5 pairs; load 1.2–2.1)"; kept under `key` for the comparison with an earlier run. */
export function describe(r: Rounds, of: string, key: string): { ratio: number; text: string } {
  const ratios = pairRatios(r);
  const ratio = median(ratios);
  ratiosOfThisRun.set(key, ratio);
  const rerun = r.attempts > 1 ? `; ${r.attempts} attempts, the calmest kept` : '';
  return { ratio, text: `${ratio.toFixed(2)}× ${of} (median; ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} over ${ratios.length} pairs; load ${Math.min(...r.load).toFixed(1)}–${Math.max(...r.load).toFixed(1)}${rerun})` };
}
