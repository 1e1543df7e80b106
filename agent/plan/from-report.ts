import type { ApplyReport } from '../act/reconcile.ts';
import { summarize, type Plan } from './plan.ts';

/** A dry run's report as a Plan: destructive changes first, then by address. */
export function planFromReport(report: ApplyReport, against: string): Plan {
  const changes = [...report.changes].sort((a, b) => Number(b.destructive) - Number(a.destructive) || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  return { revision: report.revision, against, summary: summarize(changes), changes, drift: report.drift, held: report.held, images: report.images, warnings: report.warnings };
}
