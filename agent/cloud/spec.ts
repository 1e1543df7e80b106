import type { OpenStackCloudService, OpenStackCloudSpec } from '../model/kinds.generated.ts';
import { CHARTS, type ChartInfo } from './catalogue.ts';

/** The spec of one chart as the user declared it, under services.<chart> or infrastructure.<chart>. */
export function declaredChart(spec: OpenStackCloudSpec, chart: ChartInfo): OpenStackCloudService | undefined {
  const group = (chart.infrastructure ? spec.infrastructure : spec.services) as Record<string, OpenStackCloudService | undefined> | undefined;
  return group?.[chart.chart];
}

/** JSON path of a chart's block in the spec. */
export const chartPath = (chart: ChartInfo): string[] => ['spec', chart.infrastructure ? 'infrastructure' : 'services', chart.chart];

/** The charts this spec deploys, in catalogue order. */
export function enabledCharts(spec: OpenStackCloudSpec): ChartInfo[] {
  return CHARTS.filter((c) => declaredChart(spec, c)?.enabled ?? c.enabledByDefault);
}
