import type { Command } from 'commander';
import { DockerConfigCredentials } from '../../oci/auth/docker-config.ts';
import { version } from '../version.ts';

/** The options every image subcommand that talks to a registry shares (the twin of cloud-options.ts). */
export interface RegistryOptions {
  insecure: boolean;
  dockerConfig?: string;
}

/** How KupenStack names itself to registries. */
export const userAgent = `kupenstack/${version}`;

/** --insecure and --docker-config. */
export function withRegistryOptions(cmd: Command): Command {
  return cmd
    .option('--insecure', 'plain HTTP to this registry (loopback test registries, air-gapped mirrors); TLS verification is never turned off', false)
    .option('--docker-config <file>', 'credentials from this docker config.json / .dockerconfigjson (default: $DOCKER_CONFIG/config.json when set)');
}

export function credentialsFrom(opts: RegistryOptions): DockerConfigCredentials | undefined {
  return DockerConfigCredentials.fromEnvironment(opts.dockerConfig);
}
