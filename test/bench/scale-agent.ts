import { performance } from 'node:perf_hooks';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import type { AgentConfig } from '../../agent/config/config.ts';
import { ApiCounters } from '../../agent/openstack/counters.ts';

/**
 * The agent side of the scale bench, in its own process started with the
 * flags the product runs with (agentFlags): its RSS is the agent's, not the
 * bench's. It applies what the parent asks, one run after another in the
 * same process as a long-running agent would, and answers with the figures.
 */
export interface ScaleRun {
  path: string;
  cloud: string;
  config: AgentConfig;
  prune: boolean;
  allowMassDelete: boolean;
}

export interface ScaleRunResult {
  seconds: number;
  /** Peak resident memory of this process during the run (sampled every 100 ms). */
  rssMb: number;
  updated: number;
  errors: string[];
  /** The errors' codes (`openstack.unreachable`: a create whose answer never came, left to the next run). */
  codes: string[];
  reads: number;
  writes: number;
  /** Calls per API collection (`network GET /ports`). */
  byCollection: Record<string, number>;
}

async function run(job: ScaleRun): Promise<ScaleRunResult> {
  const counters = new ApiCounters();
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
  const t0 = performance.now();
  try {
    const out = await applyPath({ ...job, counters, log: () => undefined });
    const report = out.report;
    return {
      seconds: (performance.now() - t0) / 1000,
      rssMb: Math.max(peak, process.memoryUsage().rss) / 2 ** 20,
      updated: report?.updated ?? 0,
      errors: report ? report.errors.map((e) => JSON.stringify(e)) : out.diagnostics.map((d) => JSON.stringify(d)),
      codes: report ? report.errors.map((e) => e.code) : out.diagnostics.map(() => 'diagnostic'),
      reads: report?.apiCalls.read ?? 0,
      writes: report?.apiCalls.write ?? 0,
      byCollection: counters.byCollection(),
    };
  } finally {
    clearInterval(timer);
  }
}

if (process.send) {
  process.on('message', (job: ScaleRun) => {
    run(job).then(
      (result) => process.send!({ result }),
      (err: unknown) => process.send!({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
}
