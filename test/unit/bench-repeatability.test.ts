import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { compare, readHistory, repeatabilityRow, type RatioRun } from '../../test/bench/repeatability.ts';
import { busyOver, interleaved } from '../../test/bench/rounds.ts';

const at = (iso: string): Date => new Date(iso);
const run = (iso: string, ratios: Record<string, number>): RatioRun => ({ at: iso, ratios });

describe('the bench: OCI ratios beside an earlier run (test/bench/repeatability.ts)', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('misses, and says when to run again, with no run 50 min or more before this one', () => {
    const row = compare(new Map([['pull', 0.8]]), [run('2026-11-28T19:30:00.000Z', { pull: 0.8 })], at('2026-11-28T20:00:00.000Z'));
    expect(row.met).toBe(false);
    expect(row.ours).toContain('after 20:50 UTC');
  });

  it('compares with the latest run at least 50 min older, key by key, and meets only when each is within 10 %', () => {
    const earlier = [run('2026-11-28T18:00:00.000Z', { pull: 0.5, push: 0.8 }), run('2026-11-28T19:00:00.000Z', { pull: 0.8, push: 0.8 }), run('2026-11-28T19:40:00.000Z', { pull: 0.1, push: 0.1 })];
    const now = at('2026-11-28T20:00:00.000Z');
    const within = compare(new Map([['pull', 0.85], ['push', 0.75]]), earlier, now);
    expect(within.peer).toContain('60 min earlier');
    expect(within.ours).toContain('pull 0.80→0.85 (+6 %)');
    expect(within.met).toBe(true);
    const off = compare(new Map([['pull', 0.9], ['push', 0.8]]), earlier, now);
    expect(off.ours).toContain('worst 13 %');
    expect(off.met).toBe(false);
  });

  it('misses when a row of this run has no counterpart in the earlier one', () => {
    const row = compare(new Map([['pull', 0.8], ['zstd pull', 1.2]]), [run('2026-11-28T18:00:00.000Z', { pull: 0.8 })], at('2026-11-28T20:00:00.000Z'));
    expect(row.met).toBe(false);
  });

  it('appends each run to the history it reads', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ks-repeat-'));
    dirs.push(dir);
    const file = join(dir, 'sub', 'h.jsonl');
    expect(repeatabilityRow(new Map([['pull', 0.8]]), at('2026-11-28T18:00:00.000Z'), file).met).toBe(false);
    expect(repeatabilityRow(new Map([['pull', 0.82]]), at('2026-11-28T19:00:00.000Z'), file).met).toBe(true);
    expect(readHistory(file).map((r) => r.ratios.pull)).toEqual([0.8, 0.82]);
  });
});

describe('the bench: interleaved rounds (test/bench/rounds.ts)', () => {
  it('settles off the clock before each side of each pair, A B A B', async () => {
    const order: string[] = [];
    const r = await interleaved(() => void order.push('A'), () => void order.push('B'), { pairs: 2, settle: () => void order.push('s'), calm: () => {
      order.push('c');
      return Promise.resolve(0);
    } });
    expect(order).toEqual(['s', 'c', 'A', 's', 'c', 'B', 's', 'c', 'A', 's', 'c', 'B']);
    expect(r.ours).toHaveLength(2);
    expect(r.busy).toEqual([0, 0, 0, 0]);
    expect(r.attempts).toBe(1);
  });

  it('runs a row again when a side had to start on busy cores, and keeps the calmest attempt', async () => {
    // Attempt 1: the second side of pair 1 started at 90 %; attempt 2: every side calm.
    const busy = [0.1, 0.9, 0.1, 0.1, 0.05, 0.1, 0.2, 0.1];
    const calm = (): Promise<number> => Promise.resolve(busy.shift()!);
    const r = await interleaved(() => 1, () => 2, { pairs: 2, calm, maxBusy: 0.25 });
    expect(r.attempts).toBe(2);
    expect(r.busy).toEqual([0.05, 0.1, 0.2, 0.1]);
  });

  it('stops after three attempts and keeps the one with the fewest busy starts', async () => {
    const busy = [0.9, 0.9, 0.1, 0.1, /* 2 */ 0.5, 0.1, 0.1, 0.1, /* 3 */ 0.9, 0.3, 0.9, 0.1];
    const r = await interleaved(() => 1, () => 2, { pairs: 2, calm: () => Promise.resolve(busy.shift()!), maxBusy: 0.25 });
    expect(r.attempts).toBe(3);
    expect(r.busy).toEqual([0.5, 0.1, 0.1, 0.1]);
  });

  it("measures the cores' busy time from /proc/stat: a fraction of all cores, near 1 while every core spins", async () => {
    // A spinning process per core for the whole window (idle would read near 0).
    const spins = cpus().map(() => spawn(process.execPath, ['-e', 'const t = Date.now(); while (Date.now() - t < 2000);']));
    await sleep(400);
    const b = await busyOver(800);
    for (const s of spins) s.kill();
    expect(b).toBeGreaterThan(0.8);
    expect(b).toBeLessThanOrEqual(1);
  });
});
