import { stringify } from 'yaml';
import type { CloudConfig } from '../../openstack/clouds.ts';

/** The cloud's name inside the Secret's clouds.yaml (`OS_CLOUD=openstack`, cloud-provider-openstack's default). */
export const secretCloudName = 'openstack';

/**
 * What the Secret holds: a clouds.yaml a client uses as it is (openstack
 * CLI, gophercloud, cloud-provider-openstack), and the same values as
 * separate keys for tools that take them one by one. Built in memory and
 * handed to the writer only; nothing here is logged or returned elsewhere.
 */
export function secretData(cloud: Pick<CloudConfig, 'authUrl' | 'regionName' | 'interface' | 'verify'>, id: string, secret: string): Record<string, string> {
  const entry = {
    auth_type: 'v3applicationcredential',
    auth: { auth_url: cloud.authUrl, application_credential_id: id, application_credential_secret: secret },
    ...(cloud.regionName ? { region_name: cloud.regionName } : {}),
    interface: cloud.interface,
    identity_api_version: 3,
    ...(cloud.verify ? {} : { verify: false }),
  };
  return {
    'clouds.yaml': stringify({ clouds: { [secretCloudName]: entry } }),
    application_credential_id: id,
    application_credential_secret: secret,
    auth_url: cloud.authUrl,
    ...(cloud.regionName ? { region_name: cloud.regionName } : {}),
  };
}
