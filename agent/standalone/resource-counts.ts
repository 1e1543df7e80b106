import type { ApplyReport } from '../act/apply.ts';

/**
 * Objects per `Kind state` (ready, failed) for the kupenstack_resources
 * gauge, from the report's per-kind counts: the engine's state file is the
 * engine's own business.
 */
export function resourceCounts(report: Pick<ApplyReport, 'kinds'>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [kind, t] of Object.entries(report.kinds)) {
    // Every kind the revision declares is listed, so a kind whose objects all failed still shows ready 0.
    counts.set(`${kind} ready`, t.created + t.updated + t.replaced + t.healed + t.unchanged);
    if (t.errors > 0) counts.set(`${kind} failed`, t.errors);
  }
  return counts;
}
