import { stringify } from 'yaml';
import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import type { CloudConfig } from '../openstack/clouds.ts';
import type { CloudSecrets } from './secrets.ts';
import type { Values } from './values.ts';

/**
 * How the resource loop reaches a cloud KupenStack installed: its Keystone's in-cluster URL
 * and the admin the install generated (values.ts gives the same user to keystone's bootstrap).
 * An operator never copies a password: the install writes this as a clouds.yaml Secret
 * (store.ts) and `kupenstack controller --cloud <name> --clouds-secret <ns>/<secret>` reads it.
 */
export interface AdminAccess {
  /** The clouds.yaml entry: the OpenStackCloud's name. */
  cloud: string;
  authUrl: string;
  region: string;
  username: string;
  password: string;
  project: string;
  domain: string;
}

const isMap = (v: unknown): v is Values => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);
/** OSH keys that are either a plain value or a map by interface ({default, internal, public}). */
const byInterface = (v: unknown, iface: string): string | undefined => (isMap(v) ? (str(v[iface]) ?? str(v.default)) : str(v));

/**
 * The in-cluster URL of endpoints.<type> at the internal interface, as OpenStack-Helm's
 * helm-toolkit computes it (keystone_endpoint_uri_lookup): scheme://host.namespace.svc.suffix:port/path.
 * `defaults` is the chart's values.yaml, `values` what KupenStack passed (later wins). The
 * controller runs in the cluster, so the internal Service is what it reaches (no ingress).
 */
export function internalUrl(defaults: Values, values: Values, type: string, namespace: string): string | undefined {
  const of = (v: Values): Values => (isMap(v.endpoints) && isMap(v.endpoints[type]) ? v.endpoints[type] : {});
  const [d, v] = [of(defaults), of(values)];
  const get = (key: string): unknown => (isMap(d[key]) && isMap(v[key]) ? { ...d[key], ...v[key] } : (v[key] ?? d[key]));
  const host = byInterface(get('hosts'), 'internal');
  const ports = get('port');
  const port = isMap(ports) ? byInterface(ports.api, 'internal') : undefined;
  if (!host || !port) return undefined;
  const scheme = byInterface(get('scheme'), 'internal') ?? 'http';
  const path = byInterface(get('path'), 'internal') ?? '';
  const suffixOf = (v: Values): string | undefined => (isMap(v.endpoints) ? str(v.endpoints.cluster_domain_suffix) : undefined);
  const suffix = suffixOf(values) ?? suffixOf(defaults) ?? 'cluster.local';
  return `${scheme}://${host}.${str(get('namespace')) ?? namespace}.svc.${suffix}:${port}${path}`;
}

/** The admin access of an installed cloud: undefined without an identity chart's URL (nothing to log in to). */
export function adminAccess(cloud: string, spec: OpenStackCloudSpec, identityUrl: string | undefined, secrets: CloudSecrets): AdminAccess | undefined {
  if (!identityUrl) return undefined;
  // The names values.ts wires into endpoints.identity.auth.admin (keystone's bootstrap makes that user).
  return {
    cloud,
    authUrl: identityUrl,
    region: spec.region ?? 'RegionOne',
    username: 'admin',
    password: secrets.identityAdmin,
    project: 'admin',
    domain: 'default',
  };
}

/** openstacksdk's clouds.yaml for that admin: what `openstack --os-cloud` and `kupenstack --clouds` read. */
export function adminCloudsYaml(a: AdminAccess): string {
  const entry = {
    auth: { auth_url: a.authUrl, username: a.username, password: a.password, project_name: a.project, user_domain_id: a.domain, project_domain_id: a.domain },
    region_name: a.region,
    interface: 'internal',
    identity_api_version: 3,
  };
  return stringify({ clouds: { [a.cloud]: entry } });
}

/** The same access as the OpenStack client's config (the cloud loop reads the catalog with it). */
export function adminCloudConfig(a: AdminAccess, where: string): CloudConfig {
  return {
    name: a.cloud,
    file: where,
    authUrl: a.authUrl.replace(/\/+$/, ''),
    credentials: { type: 'password', username: a.username, password: a.password, userDomainId: a.domain },
    project: { name: a.project, domainId: a.domain },
    regionName: a.region,
    interface: 'internal',
    verify: true,
  };
}
