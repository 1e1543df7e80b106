import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import type { ChartInfo } from './catalogue.ts';
import type { CloudSecrets } from './secrets.ts';
import { declaredChart } from './spec.ts';

/**
 * An OpenStackCloud spec → the values of one OpenStack-Helm chart, in layers (later wins):
 *  1. the wiring KupenStack owns, the same in every chart: endpoints.* (hosts, region,
 *     passwords from the cloud's own Secret, memcache_secret_key pinned so that a second
 *     render is identical — OSH charts draw it with randAlphaNum otherwise);
 *  2. the release's overrides (values_overrides/<chart>/<release>.yaml: the images);
 *  3. the spec: replicas (services.<chart>.replicas, else the size preset) for every
 *     pod.replicas key the chart has, conf, image pins, the image registry override;
 *  4. services.<chart>.values, raw.
 * Maps merge, lists replace (Helm's rule).
 */
export interface ValuesInput {
  spec: OpenStackCloudSpec;
  chart: ChartInfo;
  /** The chart's own values.yaml. */
  defaults: Record<string, unknown>;
  /** values_overrides/<chart>/<release>.yaml of the chart source, when it has one. */
  releaseOverride?: Record<string, unknown>;
  secrets: CloudSecrets;
  /** Kubernetes namespace of the cloud. */
  namespace: string;
}

export type Values = Record<string, unknown>;

const SIZE_REPLICAS = { small: 1, medium: 2, large: 3 } as const;

const isMap = (v: unknown): v is Values => typeof v === 'object' && v !== null && !Array.isArray(v);

function mergeValues(base: Values, over: Values): Values {
  const out: Values = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isMap(v) && isMap(out[k]) ? mergeValues(out[k], v) : v;
  return out;
}

export function chartValues(input: ValuesInput): Values {
  const { spec, chart } = input;
  const declared = declaredChart(spec, chart);
  let values = mergeValues(wiring(input), input.releaseOverride ?? {});

  const own: Values = {};
  const replicaKeys = Object.keys(((input.defaults.pod as Values | undefined)?.replicas as Values | undefined) ?? {});
  const replicas = declared?.replicas ?? SIZE_REPLICAS[spec.size ?? 'small'];
  if (replicaKeys.length > 0) own.pod = { replicas: Object.fromEntries(replicaKeys.map((k) => [k, replicas])) };
  if (declared?.conf) own.conf = declared.conf;
  values = mergeValues(values, own);

  const tags = {
    ...(((input.defaults.images as Values | undefined)?.tags as Record<string, string> | undefined) ?? {}),
    ...((values.images as Values | undefined)?.tags as Record<string, string> | undefined),
    ...(declared?.images ?? {}),
  };
  if (spec.imageRegistry) for (const [k, v] of Object.entries(tags)) tags[k] = withRegistry(v, spec.imageRegistry);
  if (Object.keys(tags).length > 0) values = mergeValues(values, { images: { tags } });
  return declared?.values ? mergeValues(values, declared.values) : values;
}

/** The cross-chart wiring: every chart sees the same hosts and credentials. */
function wiring(input: ValuesInput): Values {
  const { spec, chart, secrets, namespace } = input;
  const region = spec.region ?? 'RegionOne';
  const dbAuth: Values = { admin: { username: 'root', password: secrets.databaseRoot } };
  const mqAuth: Values = { admin: { username: 'rabbitmq', password: secrets.messagingAdmin } };
  const identityAuth: Values = {
    admin: {
      region_name: region,
      username: 'admin',
      password: secrets.identityAdmin,
      project_name: 'admin',
      user_domain_name: 'default',
      project_domain_name: 'default',
    },
  };
  if (!chart.infrastructure) {
    const service = secrets.services[chart.chart];
    if (service) {
      dbAuth[chart.chart] = { username: chart.chart, password: service.database };
      mqAuth[chart.chart] = { username: chart.chart, password: service.messaging };
      identityAuth[chart.chart] = {
        region_name: region,
        username: chart.chart,
        password: service.identity,
        project_name: 'service',
        user_domain_name: 'service',
        project_domain_name: 'service',
        role: 'admin',
      };
    }
  }
  return {
    endpoints: {
      cluster_domain_suffix: 'cluster.local',
      oslo_db: { namespace, auth: dbAuth },
      oslo_messaging: { namespace, auth: mqAuth },
      oslo_cache: { namespace, auth: { memcache_secret_key: secrets.memcacheSecretKey } },
      identity: { namespace, auth: identityAuth },
    },
  };
}

/** `quay.io/airshipit/keystone:2025.1` with registry `mirror.example.com/osh` → `mirror.example.com/osh/airshipit/keystone:2025.1`. */
export function withRegistry(image: string, registry: string): string {
  const slash = image.indexOf('/');
  const first = slash < 0 ? '' : image.slice(0, slash);
  const hasRegistry = first.includes('.') || first.includes(':') || first === 'localhost';
  const path = hasRegistry ? image.slice(slash + 1) : image;
  return `${registry.replace(/\/$/, '')}/${path}`;
}
