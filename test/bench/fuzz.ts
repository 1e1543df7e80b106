import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { diskTarget, erase, manifestTarget, ociManifestTarget, referenceTarget, tarTarget, webhookTarget } from '../support/fuzz.ts';
import type { BenchRow } from './table.ts';

/**
 * `BENCH_ONLY=fuzz`: the fuzz targets of test/unit/fuzz.test.ts, longer
 * (KS_FUZZ_RUNS cases per target, default 20 000; a new seed every time
 * unless KS_FUZZ_SEED is set, printed to replay a finding).
 */
export async function benchFuzz(): Promise<BenchRow[]> {
  const runs = Number(process.env.KS_FUZZ_RUNS ?? 20_000);
  const seed = Number(process.env.KS_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const targets = [erase(manifestTarget(loadSchemaRegistry())), erase(ociManifestTarget), erase(referenceTarget), erase(tarTarget), erase(diskTarget), erase(webhookTarget)];
  const rows: BenchRow[] = [];
  for (const target of targets) {
    const caseMs = 2_000;
    try {
      const r = await target.fuzz({ seed, runs, caseMs });
      rows.push({ name: `fuzz: ${target.name}`, ours: `${runs} cases in ${(r.ms / 1000).toFixed(1)} s, slowest ${r.slowestMs.toFixed(0)} ms, heap ${r.heapGrowthMb >= 0 ? '+' : ''}${r.heapGrowthMb.toFixed(0)} MB`, peer: `seed ${seed}`, goal: `0 findings, each case ≤ ${caseMs} ms`, met: true });
    } catch (err) {
      console.error(err);
      rows.push({ name: `fuzz: ${target.name}`, ours: `finding: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 120)}`, peer: `seed ${seed}`, goal: `0 findings, each case ≤ ${caseMs} ms`, met: false });
    }
  }
  return rows;
}
