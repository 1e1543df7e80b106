import { chartInfo } from '../../cloud/catalogue.ts';
import type { OpenStackCloudStatus } from '../../model/kinds.generated.ts';
import type { Token } from '../../openstack/session.ts';

/** One chart's public endpoint as the CR's status shows it. */
export type ServiceEndpoint = NonNullable<NonNullable<OpenStackCloudStatus['services']>[string]['endpoint']>;

/**
 * Each service chart's public endpoint in the Keystone catalog (catalogue.ts maps a chart to
 * its service type: keystone → identity, cinder → volumev3…). Infrastructure charts have no
 * endpoint. A type the catalog does not list is Missing, not an error: a chart being
 * installed registers its endpoints with its ks-endpoints Job. When the catalog could not be
 * read at all, every service is Unknown with the reason (the error names no credential).
 */
export function serviceEndpoints(charts: readonly string[], catalog: Token['catalog'] | Error, region?: string): Record<string, ServiceEndpoint> {
  const out: Record<string, ServiceEndpoint> = {};
  for (const chart of charts) {
    const serviceType = chartInfo(chart)?.serviceType;
    if (!serviceType) continue;
    if (catalog instanceof Error) {
      out[chart] = { serviceType, state: 'Unknown', message: `the Keystone catalog could not be read: ${catalog.message}`.slice(0, 1024) };
      continue;
    }
    const entry = catalog.find((e) => e.type === serviceType);
    const ep = entry?.endpoints.find((e) => e.interface === 'public' && (!region || e.region === region || e.region_id === region));
    out[chart] = ep
      ? { serviceType, url: ep.url.replace(/\/+$/, ''), state: 'Listed' }
      : {
          serviceType,
          state: 'Missing',
          message: `the catalog lists no public ${serviceType} endpoint${region ? ` in region ${region}` : ''}${entry ? '' : ` (no ${serviceType} service)`}`,
        };
  }
  return out;
}
