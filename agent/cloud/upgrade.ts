import { chartInfo, CHARTS, UPGRADE_ORDER } from './catalogue.ts';
import { WORKLOAD_KINDS, type Step } from './phases.ts';
import type { RenderedChart } from './render-cloud.ts';
import type { RenderedObject } from './render.ts';

/**
 * A release change, planned: the charts one at a time in the fixed order (infrastructure
 * first, then Rockoon's order by service type: identity → placement → image → network →
 * compute → block storage → … → dashboard), and inside a chart its upgrade map — its
 * configuration, then its Jobs by hook phase and weight (db-sync, or expand and migrate,
 * change the schema while the old API still serves), then its workloads rolled and gated,
 * then a contract Job last (Rockoon's expand → migrate → api → contract) — so that objects
 * move one at a time. Before the first chart, a backup Job made from the mariadb chart's backup
 * CronJob.
 */
export function upgradeOrder(charts: readonly RenderedChart[]): string[] {
  const rank = (chart: string): number => {
    const info = chartInfo(chart);
    if (!info) return 1000;
    if (info.infrastructure) return CHARTS.indexOf(info) - 100;
    const i = UPGRADE_ORDER.indexOf(info.serviceType ?? '');
    return i < 0 ? 100 + CHARTS.indexOf(info) : i;
  };
  return charts.map((c) => c.chart).sort((a, b) => rank(a) - rank(b));
}

export function upgradeSteps(chart: RenderedChart, group: number): Step[] {
  const charts = [chart.chart];
  const live = chart.objects.filter((o) => o.phase.kind !== 'delete');
  const config = live.filter((o) => o.phase.kind === 'main' && !WORKLOAD_KINDS.has(o.kind));
  const workloads = live.filter((o) => o.phase.kind === 'main' && WORKLOAD_KINDS.has(o.kind));
  // A contract migration drops what the old code still reads: it runs once the new API is rolled out.
  const isContract = (o: RenderedObject): boolean => o.name.endsWith('-contract');
  const hooks = live.filter((o) => o.phase.kind === 'hook');
  const hookSteps = (of: RenderedObject[]): Step[] =>
    (['pre', 'post'] as const).flatMap((when) => {
      const at = of.filter((o) => o.phase.kind === 'hook' && o.phase.when === when);
      const weights = [...new Set(at.map((o) => (o.phase as { weight: number }).weight))].sort((a, b) => a - b);
      return weights.map((weight): Step => ({
        kind: 'hooks',
        group,
        charts,
        weight,
        when,
        objects: at.filter((o) => (o.phase as { weight: number }).weight === weight),
      }));
    });
  return [
    { kind: 'apply', group, charts, objects: config },
    ...hookSteps(hooks.filter((o) => !isContract(o))),
    { kind: 'apply', group, charts, objects: workloads },
    { kind: 'gate', group, charts, objects: workloads },
    ...hookSteps(hooks.filter(isContract)),
  ];
}

/** The backup Job of an upgrade to `to`: the mariadb chart's backup CronJob's jobTemplate, named for the upgrade. */
export function backupJob(rendered: readonly RenderedChart[], to: string): RenderedObject | undefined {
  const cron = rendered.find((c) => c.chart === 'mariadb')?.objects.find((o) => o.kind === 'CronJob' && /backup/.test(o.name));
  if (!cron) return undefined;
  const spec = (cron.object.spec as { jobTemplate?: { spec?: Record<string, unknown> } } | undefined)?.jobTemplate?.spec;
  if (!spec) return undefined;
  const name = `${cron.name}-before-${to.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`;
  const labels = (cron.object.metadata as { labels?: Record<string, string> } | undefined)?.labels;
  return {
    chart: 'mariadb',
    apiVersion: 'batch/v1',
    kind: 'Job',
    name,
    phase: { kind: 'main' },
    template: cron.template,
    object: { apiVersion: 'batch/v1', kind: 'Job', metadata: { name, ...(labels ? { labels } : {}) }, spec },
  };
}
