import type { ApplyReport } from '../act/reconcile.ts';

/** Per kind, what one run did (the engine contract's `ApplyReport.kinds`). */
export interface KindTally {
  created: number;
  updated: number;
  replaced: number;
  deleted: number;
  healed: number;
  unchanged: number;
  errors: number;
}

/** The report as the runner reads it: `kinds` is the engine contract's per-kind tally (house-engine's applyRevision). */
export type RunReport = Pick<ApplyReport, 'errors' | 'changes' | 'observed'> & { kinds?: Record<string, KindTally> };

/**
 * Objects per `Kind state` (ready, failed) for the kupenstack_resources
 * gauge, from the run's report: the engine's state file is the engine's.
 */
export function resourceCounts(report: RunReport): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (kind: string, state: string, n: number): void => {
    if (n > 0) counts.set(`${kind} ${state}`, (counts.get(`${kind} ${state}`) ?? 0) + n);
  };
  if (report.kinds) {
    for (const [kind, t] of Object.entries(report.kinds)) {
      add(kind, 'ready', t.created + t.updated + t.replaced + t.healed + t.unchanged);
      add(kind, 'failed', t.errors);
    }
    return counts;
  }
  // Until the engine's report carries `kinds`: what was observed or changed, less what was deleted or failed.
  const kindOf = (address: string): string => address.split('/').at(-2) ?? 'unknown';
  const present = new Set(Object.keys(report.observed));
  for (const c of report.changes) {
    if (c.action === 'delete') present.delete(c.address);
    else present.add(c.address);
  }
  const failed = new Set(report.errors.map((e) => e.address));
  for (const address of present) add(kindOf(address), failed.has(address) ? 'failed' : 'ready', 1);
  for (const address of failed) if (!present.has(address)) add(kindOf(address), 'failed', 1);
  return counts;
}
