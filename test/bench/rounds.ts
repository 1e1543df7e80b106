import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Issue 33, OCI figures that hold still: ours and the peer's runs
 * interleaved (A B A B …, at least 5 each), each pair's ratio. Each side
 * starts on a calm machine: after its settle, the bench waits (up to
 * `calmMs`) until the cores were at most `maxBusy` busy over a second, and
 * records how busy they were. A row is judged on the median ratio, printed
 * with its spread; a row in which a side had to start busier than that is
 * run again (up to twice) and the calmest attempt is kept.
 *
 * Why not the load average: its 1-minute mean still holds the bench's own
 * last round (three processes of the C pipe put it at 4–7 on 2 cores), so a
 * limit on it reran most rows without telling a busy machine from a bench
 * that had just worked; the cores' busy time over the last second does.
 */
export interface Rounds {
  /** Milliseconds of each of our runs, in order. */
  ours: number[];
  theirs: number[];
  /** The 1-minute load average before the first pair and after each pair (shown, not judged). */
  load: number[];
  /** How busy the cores were (0–1) over the second before each side started: ours, theirs, ours, … */
  busy: number[];
  /** How many attempts the row took (1 when every side started calm). */
  attempts: number;
}

export const minRounds = Number(process.env.BENCH_ROUNDS ?? '5');
/** A side starts once the cores were at most this busy over a second (0–1 of all cores). */
export const maxBusy = Number(process.env.BENCH_MAX_BUSY ?? '0.25');
/** How long a side waits for that at most, before it starts anyway (and the row counts as not calm). */
export const calmMs = Number(process.env.BENCH_CALM_MS ?? '30000');

/** Milliseconds `f` took; a side that measures itself (a child process's own clock, without its start) returns its milliseconds instead. */
export async function timed(f: () => unknown): Promise<number> {
  const t0 = performance.now();
  const own: unknown = await f();
  return typeof own === 'number' ? own : performance.now() - t0;
}

/** The busy and total jiffies of all cores (/proc/stat's first line). */
function cpuJiffies(): { busy: number; total: number } {
  const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  const n = f.map(Number);
  const idle = n[3]! + n[4]!;
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** How busy the cores were over the next `ms` (0–1). */
export async function busyOver(ms: number): Promise<number> {
  const a = cpuJiffies();
  await sleep(ms);
  const b = cpuJiffies();
  return b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : 0;
}

/** Waits until the cores were at most `limit` busy over a second, up to `timeoutMs`; the last second's busy fraction. */
export async function waitForCalm(limit = maxBusy, timeoutMs = calmMs): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy = await busyOver(1_000);
    if (busy <= limit || Date.now() >= deadline) return busy;
  }
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
  /** After the settle, off the clock: waits for a calm machine and says how busy it was (default waitForCalm). */
  calm?: () => Promise<number>;
  /** A side that started busier than this makes the row run again (default BENCH_MAX_BUSY). */
  maxBusy?: number;
  /**
   * Off the clock, before the first pair: each side runs this often (default 0).
   * Rows that measure the warm process use it, so that the first pairs do not
   * time V8 compiling the path (measured on the pull: 0.9 CPU-s user in the
   * first round, 0.6 from the fourth, with Node's default flags).
   */
  warmups?: number;
}

/** The settle the OCI rows use: `sync`, so the last round's writes reach the disk before the next round's clock starts. */
export const flushWrites = (): void => void execFileSync('sync');

type Attempt = Omit<Rounds, 'attempts'>;

async function once(n: number, ours: () => unknown, theirs: () => unknown, settle: () => unknown, calm: () => Promise<number>): Promise<Attempt> {
  const r: Attempt = { ours: [], theirs: [], load: [loadavg()[0]!], busy: [] };
  for (let i = 0; i < n; i++) {
    await settle();
    r.busy.push(await calm());
    r.ours.push(await timed(ours));
    await settle();
    r.busy.push(await calm());
    r.theirs.push(await timed(theirs));
    r.load.push(loadavg()[0]!);
  }
  return r;
}

/** Sides that started busier than `limit`. */
const restless = (r: Attempt, limit: number): number => r.busy.filter((b) => b > limit).length;

export async function interleaved(ours: () => unknown, theirs: () => unknown, options: RoundOptions = {}): Promise<Rounds> {
  const n = options.pairs ?? minRounds;
  const settle = options.settle ?? ((): void => undefined);
  const limit = options.maxBusy ?? maxBusy;
  const calm = options.calm ?? ((): Promise<number> => waitForCalm(limit));
  for (let i = 0; i < (options.warmups ?? 0); i++) {
    await ours();
    await settle();
    await theirs();
    await settle();
  }
  let best: Attempt | undefined;
  let attempts = 0;
  while (attempts < 3) {
    attempts++;
    const r = await once(Math.max(n, 1), ours, theirs, settle, calm);
    if (!best || restless(r, limit) < restless(best, limit) || (restless(r, limit) === restless(best, limit) && Math.max(...r.busy) < Math.max(...best.busy))) best = r;
    if (restless(r, limit) === 0) break;
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
  const pct = (x: number): string => `${Math.round(x * 100)} %`;
  return { ratio, text: `${ratio.toFixed(2)}× ${of} (median; ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} over ${ratios.length} pairs; cores busy before each side ${pct(Math.min(...r.busy))}–${pct(Math.max(...r.busy))}; load ${Math.min(...r.load).toFixed(1)}–${Math.max(...r.load).toFixed(1)}${rerun})` };
}
