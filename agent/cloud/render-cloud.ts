import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import { internalUrl } from './admin-clouds.ts';
import { findRelease } from './releases.ts';
import { fetchChart } from './chart-source.ts';
import { chartDefaults, renderChart, type RenderedObject } from './render.ts';
import type { CloudSecrets } from './secrets.ts';
import { enabledCharts } from './spec.ts';
import { chartValues, type Values } from './values.ts';
import { allSettledOrThrow } from '../util/concurrency.ts';

/**
 * Every enabled chart of a cloud: fetched (and verified) from the chart source, its values
 * computed from the spec, rendered. Charts are fetched and rendered concurrently (each is a
 * helm subprocess); the result is in catalogue order.
 */
export interface RenderedChart {
  chart: string;
  version: string;
  digest?: string;
  source: string;
  values: Values;
  objects: RenderedObject[];
  /** The identity chart's in-cluster Keystone URL (endpoints.identity, internal): where the install's admin logs in. */
  identityUrl?: string;
  /** Milliseconds spent fetching and rendering this chart (the bench reports it). */
  millis: { fetch: number; render: number };
}

export interface RenderCloudInput {
  spec: OpenStackCloudSpec;
  namespace: string;
  secrets: CloudSecrets;
  helm: string;
  workDir: string;
  baseDir: string;
  kubeVersion?: string;
  signal?: AbortSignal;
}

export async function renderCloud(input: RenderCloudInput): Promise<RenderedChart[]> {
  const release = findRelease(input.spec.release)?.series ?? input.spec.release;
  // Every chart settles before a failure is thrown: the caller removes workDir, where the others may still be unpacking.
  return allSettledOrThrow(
    enabledCharts(input.spec).map(async (chart) => {
      const t0 = performance.now();
      const fetched = await fetchChart({
        source: input.spec.chart ?? {},
        chart: chart.chart,
        helm: input.helm,
        workDir: input.workDir,
        baseDir: input.baseDir,
        signal: input.signal,
      });
      const t1 = performance.now();
      const { defaults, releaseOverride } = await chartDefaults(fetched.dir, release);
      const values = chartValues({ spec: input.spec, chart, defaults, releaseOverride, secrets: input.secrets, namespace: input.namespace });
      const objects = await renderChart({
        helm: input.helm,
        dir: fetched.dir,
        chart: chart.chart,
        namespace: input.namespace,
        values,
        kubeVersion: input.kubeVersion,
        signal: input.signal,
      });
      const identityUrl = chart.serviceType === 'identity' ? internalUrl(defaults, values, 'identity', input.namespace) : undefined;
      const millis = { fetch: t1 - t0, render: performance.now() - t1 };
      return {
        chart: chart.chart,
        version: fetched.version,
        digest: fetched.digest,
        source: fetched.source,
        values,
        objects,
        ...(identityUrl ? { identityUrl } : {}),
        millis,
      };
    }),
  );
}
