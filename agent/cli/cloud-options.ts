import type { Command } from 'commander';
import { loadConfig, type KupenstackConfig } from '../sync/config-file.ts';
import { UsageError } from '../errors.ts';

/** The options every command that talks to a cloud shares. */
export interface CloudOptions {
  cloud?: string;
  clouds?: string;
  config?: string;
  owner?: string;
}

export function withCloudOptions(command: Command): Command {
  return command
    .option('--cloud <name>', 'clouds.yaml entry of the cloud (default: $OS_CLOUD, else "cloud" in the config file)')
    .option(
      '--clouds <file>',
      'clouds.yaml to read (default: OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml)',
    )
    .option('-c, --config <file>', 'standalone configuration (kupenstack.yaml)')
    .option('--owner <name>', 'ownership identity written into every object (overrides the config)');
}

/** The configuration with the command line's overrides, and the cloud to use. */
export function resolveCloud(opts: CloudOptions): { config: KupenstackConfig; cloud: string; cloudsFile?: string } {
  const config = loadConfig(opts.config);
  if (opts.owner) config.owner = opts.owner;
  const cloud = cloudName(opts.cloud, config.cloud);
  if (!cloud) throw new UsageError('no cloud given: pass --cloud NAME (an entry of clouds.yaml), set OS_CLOUD, or set "cloud" in the config file');
  return { config, cloud, cloudsFile: opts.clouds ?? config.clouds };
}

/**
 * The cloud to use, as every OpenStack tool picks it: the flag, else
 * `OS_CLOUD` (an empty one counts as unset), else the config file's `cloud`.
 */
export function cloudName(flag: string | undefined, configured: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return flag ?? (env.OS_CLOUD || undefined) ?? configured;
}
