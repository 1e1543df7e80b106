import type { ApplyReport } from '../act/reconcile.ts';
import { orderChanges } from './order.ts';
import { summarize, type Plan } from './plan.ts';

/** A dry run's report as a Plan. */
export function planFromReport(report: ApplyReport, against: string): Plan {
  const changes = orderChanges(report.changes);
  return { revision: report.revision, against, summary: summarize(changes), changes, drift: report.drift, held: report.held, images: [], warnings: report.warnings };
}
