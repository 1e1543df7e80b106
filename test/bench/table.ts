/**
 * One line of `npm run bench`: our figure beside the peer's, and a verdict
 * that is always computed against a stated goal (no free-text verdicts: a
 * row without a goal cannot be written).
 */
export interface BenchRow {
  name: string;
  ours: string;
  peer: string;
  /** What the row must reach, as printed (e.g. "≥ 0.9× oras", "≤ 2 s"). */
  goal: string;
  /** Whether `ours` reaches `goal`, computed from the measured numbers. */
  met: boolean;
}

/** Throughput ratio (ours ÷ peer, both in bytes per second) against a minimum ratio: `{goal, met}` for a row, and the ratio to print. */
export function ratioGoal(ours: number, peer: number, min: number, of: string): { goal: string; met: boolean; ratio: string } {
  const r = ours / peer;
  return { goal: `≥ ${min}× ${of}`, met: r >= min, ratio: `${r.toFixed(2)}× ${of}` };
}

export function renderTable(rows: BenchRow[]): string {
  // A `|` inside a cell (a shell pipe in the peer's name) is escaped so the Markdown table keeps its columns.
  const cells = (r: BenchRow): string[] => [r.name, r.ours, r.peer, r.goal, r.met ? 'meets goal' : 'MISSES GOAL'].map((c) => c.replace(/\|/g, '\\|'));
  const all = [['benchmark', 'kupenstack', 'peer / limit', 'goal', 'verdict'], ...rows.map(cells)];
  const widths = all[0]!.map((_, i) => Math.max(...all.map((c) => c[i]!.length)));
  const line = (c: string[]): string => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(' | ')} |`;
  const rule = `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(all[0]!), rule, ...all.slice(1).map(line)].join('\n');
}
