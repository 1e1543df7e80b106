import type { ConnectionSource, DownReason } from '../../kinds/openstackcloudconnection/index.ts';
import type { OpenStackCloud } from '../../openstack/cloud.ts';
import type { CloudConfig } from '../../openstack/clouds.ts';
import { ApiCounters } from '../../openstack/counters.ts';
import { CloudConfigError, OpenStackError } from '../../openstack/errors.ts';
import { Transport } from '../../openstack/transport.ts';
import { KubeSecretNotFoundError } from '../../secrets/kubernetes.ts';
import { CloudsSecretMissingError } from './cloud-from-secret.ts';

/** What one probe found; `authUrl` once the clouds.yaml was read (the status names it, never a credential). */
export type ProbeResult = ({ up: true } | { up: false; reason: DownReason; message: string }) & { authUrl?: string };

/** A probe's one call waits this long: a Keystone that takes longer is as good as down for the runs. */
const probeTimeoutMs = 5_000;

/**
 * Is a connection's cloud usable: its clouds.yaml read (SecretMissing, InvalidCloudsYaml), its Keystone
 * answering an unauthenticated GET of the auth URL (KeystoneUnreachable: refused, reset, timed out), its
 * credentials taken (BadCredentials: a 401 for a new token; a cached token is not asked for again), and
 * the connection's region in the catalog (NoSuchRegion). One call while the cloud is up and its token valid.
 */
export async function probeCloud(client: () => Promise<OpenStackCloud>, source: ConnectionSource): Promise<ProbeResult> {
  let cloud: OpenStackCloud;
  try {
    cloud = await client();
  } catch (err) {
    if (err instanceof CloudsSecretMissingError || err instanceof KubeSecretNotFoundError) return { up: false, reason: 'SecretMissing', message: err.message };
    if (err instanceof CloudConfigError) return { up: false, reason: 'InvalidCloudsYaml', message: err.message };
    throw err;
  }
  const authUrl = cloud.config.authUrl;
  const silent = await keystoneSilence(cloud);
  if (silent !== undefined) return { up: false, reason: 'KeystoneUnreachable', message: `Keystone at ${authUrl} does not answer: ${silent}`, authUrl };
  try {
    await cloud.whoami();
    if (source.region !== undefined && !(await cloud.hasService('identity')))
      return {
        up: false,
        reason: 'NoSuchRegion',
        message: `the catalog of cloud "${source.cloud}" has no identity endpoint in region ${source.region}`,
        authUrl,
      };
  } catch (err) {
    if (err instanceof CloudConfigError) return { up: false, reason: 'BadCredentials', message: err.message, authUrl };
    if (err instanceof OpenStackError) return { up: false, reason: 'KeystoneUnreachable', message: `Keystone at ${authUrl}: ${err.message}`, authUrl };
    throw err;
  }
  return { up: true, authUrl };
}

/** One probe transport per client (its connections kept alive between probes), gone with the client. */
const probeTransports = new WeakMap<OpenStackCloud, Transport>();

/** Its own transport, no retries and its own counters: a probe is not a run's call. */
function probeTransportOf(config: CloudConfig): Transport {
  return new Transport({ counters: new ApiCounters(), verify: config.verify, ...(config.cacert ? { cacert: config.cacert } : {}), retries: 0 });
}

/** Why Keystone gives no answer to a GET of its URL (any HTTP status is an answer), or undefined when it answers. */
async function keystoneSilence(cloud: OpenStackCloud): Promise<string | undefined> {
  const config = cloud.config;
  let transport = probeTransports.get(cloud);
  if (!transport) probeTransports.set(cloud, (transport = probeTransportOf(config)));
  try {
    await transport.send({ service: 'identity', method: 'GET', url: config.authUrl, timeoutMs: probeTimeoutMs });
    return undefined;
  } catch (err) {
    if (err instanceof OpenStackError) return err.detail;
    throw err;
  }
}
