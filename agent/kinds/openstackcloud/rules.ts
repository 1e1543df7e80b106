import { CHARTS, chartInfo } from '../../cloud/catalogue.ts';
import { findRelease, RELEASES } from '../../cloud/releases.ts';
import { chartPath, declaredChart, enabledCharts } from '../../cloud/spec.ts';
import { specOf } from '../../model/kinds.generated.ts';
import type { KindRules, RuleFinding } from '../kit/rule.ts';

/**
 * What the schema cannot say about an OpenStackCloud: one per cluster, a release
 * KupenStack knows, one chart source, pins and needs that name enabled charts, a
 * time zone that exists. Rules between two revisions (upgrades) are in
 * cloud/transition.ts: they need the base.
 */
export const openStackCloudRules: KindRules = {
  kind: 'OpenStackCloud',
  check(manifests) {
    const out: RuleFinding[] = [];
    const first = manifests[0];
    for (const m of manifests.slice(1)) {
      out.push({
        manifest: m,
        code: 'cloud.one-per-cluster',
        path: ['metadata', 'name'],
        message: `a second OpenStackCloud; the cluster already has "${first!.metadata.name}" (${first!.source.file}): one cluster is one cloud, keep one of them`,
      });
    }
    for (const m of manifests) {
      const spec = specOf(m, 'OpenStackCloud');
      const at = (code: string, path: (string | number)[], message: string): void => void out.push({ manifest: m, code, path, message });
      if (!findRelease(spec.release)) {
        at(
          'cloud.release-unknown',
          ['spec', 'release'],
          `release "${spec.release}" is not one KupenStack knows; use one of ${RELEASES.map((r) => r.series).join(', ')} (or its name: ${RELEASES.map((r) => r.name).join(', ')})`,
        );
      }
      if (spec.chart?.repository !== undefined && spec.chart.path !== undefined) {
        at('cloud.chart-source', ['spec', 'chart', 'path'], 'both chart.repository and chart.path are set; the charts come from one place: keep one of them');
      }
      const enabled = enabledCharts(spec);
      const on = new Set(enabled.map((c) => c.chart));
      for (const chart of Object.keys(spec.chart?.digests ?? {})) {
        if (!on.has(chart)) {
          const known = chartInfo(chart);
          at(
            'cloud.digest-chart',
            ['spec', 'chart', 'digests', chart],
            known
              ? `a digest for chart "${chart}", which this cloud does not deploy; enable it or remove the pin`
              : `a digest for "${chart}", which is not a chart of an OpenStackCloud; use one of ${CHARTS.map((c) => c.chart).join(', ')}`,
          );
        }
      }
      for (const chart of enabled) {
        const missing = chart.needs.filter((n) => !on.has(n));
        if (missing.length > 0) {
          const declared = declaredChart(spec, chart);
          const path = declared?.enabled === true ? [...chartPath(chart), 'enabled'] : ['spec', 'release'];
          at(
            'cloud.chart-needs',
            path,
            `${chart.chart} needs ${missing.join(', ')}, which ${missing.length === 1 ? 'is' : 'are'} disabled; enable ${missing.length === 1 ? 'it' : 'them'} or disable ${chart.chart}`,
          );
        }
      }
      const tz = spec.maintenanceWindow?.timeZone;
      if (tz !== undefined && !validTimeZone(tz)) {
        at(
          'cloud.time-zone',
          ['spec', 'maintenanceWindow', 'timeZone'],
          `"${tz}" is not an IANA time zone this system knows; use a name such as UTC, Europe/Paris or America/New_York`,
        );
      }
    }
    return out;
  },
};

function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
