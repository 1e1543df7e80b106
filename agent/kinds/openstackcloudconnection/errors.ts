import { KupenstackError } from '../../errors.ts';

/** Why a connection's cloud cannot be used now: what its status's Stalled condition says. */
export type DownReason =
  'KeystoneUnreachable' | 'BadCredentials' | 'NoSuchRegion' | 'SecretMissing' | 'CloudNotReady' | 'InvalidCloudsYaml' | 'NoSuchConnection';

/**
 * A namespace's cloud is down (its connection's last probe failed): the run stops before any OpenStack
 * call, its objects say so, and the namespace runs again when the probe finds the cloud back. Names the
 * connection and the cloud, never a credential.
 */
export class CloudUnreachableError extends KupenstackError {
  readonly connection: string;
  readonly reason: DownReason;

  constructor(connection: string, reason: DownReason, detail: string) {
    super('cloud.unreachable', `cloud of OpenStackCloudConnection ${connection} is not usable (${reason}): ${detail}`);
    this.connection = connection;
    this.reason = reason;
  }
}
