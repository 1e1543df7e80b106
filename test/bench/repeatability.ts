import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { testbedHome } from '../support/oci.ts';
import type { BenchRow } from './table.ts';

/**
 * Issue 33: OCI ratios that hold still, judged across runs. Each run of the
 * OCI rows appends its median ratios to a history in the test bed's home;
 * the row compares them with the latest run at least `apartMin` minutes
 * older (an hour apart, as the issue asks: 50 minutes or more), key by key.
 * With no such run on record the row says when to run again and misses.
 */
export interface RatioRun {
  at: string;
  ratios: Record<string, number>;
}

export const historyFile = join(testbedHome, 'bench', 'oci-ratios.jsonl');
const apartMin = Number(process.env.BENCH_OCI_APART_MIN ?? '50');
const tolerance = 0.1;

export function repeatabilityRow(ratios: ReadonlyMap<string, number>, now = new Date(), file = historyFile): BenchRow {
  const earlier = readHistory(file);
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, `${JSON.stringify({ at: now.toISOString(), ratios: Object.fromEntries(ratios) } satisfies RatioRun)}\n`);
  return compare(ratios, earlier, now);
}

export function readHistory(file: string): RatioRun[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as RatioRun);
}

/** The row: each shared key's change against the latest run ≥ apartMin older; met when every change is within 10 %. */
export function compare(ratios: ReadonlyMap<string, number>, earlier: readonly RatioRun[], now: Date): BenchRow {
  const name = `OCI ratios: this run beside one ≥ ${apartMin} min earlier (${tolerance * 100} % each)`;
  const before = [...earlier].filter((r) => now.getTime() - Date.parse(r.at) >= apartMin * 60_000).sort((a, b) => Date.parse(b.at) - Date.parse(a.at))[0];
  const goal = `each ratio within ${tolerance * 100} % of the earlier run's`;
  if (!before) {
    const next = new Date(now.getTime() + apartMin * 60_000).toISOString().slice(11, 16);
    return { name, ours: `no run on record ${apartMin} min before this one; run BENCH_ONLY=oci again after ${next} UTC`, peer: 'none', goal, met: false };
  }
  const changes = [...ratios].flatMap(([key, r]) => {
    const old = before.ratios[key];
    return old === undefined ? [] : [{ key, old, r, change: r / old - 1 }];
  });
  if (changes.length === 0) return { name, ours: `the run at ${before.at} has none of this run's rows`, peer: 'none', goal, met: false };
  const worst = Math.max(...changes.map((c) => Math.abs(c.change)));
  const minutes = Math.round((now.getTime() - Date.parse(before.at)) / 60_000);
  const pct = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(0)} %`;
  return {
    name,
    ours: `${changes.map((c) => `${c.key} ${c.old.toFixed(2)}→${c.r.toFixed(2)} (${pct(c.change)})`).join('; ')}; worst ${(worst * 100).toFixed(0)} %`,
    peer: `the run at ${before.at.slice(11, 16)} UTC, ${minutes} min earlier`,
    goal,
    met: worst <= tolerance && changes.length === ratios.size,
  };
}
