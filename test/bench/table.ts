/** One line of `npm run bench`: our figure beside the peer's (or the goal). */
export interface BenchRow {
  name: string;
  ours: string;
  peer: string;
  verdict: string;
}

export function renderTable(rows: BenchRow[]): string {
  const header: BenchRow = { name: 'benchmark', ours: 'kupenstack', peer: 'peer / limit', verdict: 'verdict' };
  const all = [header, ...rows];
  const w = (k: keyof BenchRow) => Math.max(...all.map((r) => r[k].length));
  const line = (r: BenchRow) => `| ${r.name.padEnd(w('name'))} | ${r.ours.padEnd(w('ours'))} | ${r.peer.padEnd(w('peer'))} | ${r.verdict.padEnd(w('verdict'))} |`;
  const rule = `|${'-'.repeat(w('name') + 2)}|${'-'.repeat(w('ours') + 2)}|${'-'.repeat(w('peer') + 2)}|${'-'.repeat(w('verdict') + 2)}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}
