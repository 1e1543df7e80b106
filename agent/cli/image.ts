import { Command, Option } from 'commander';
import { UsageError } from '../errors.ts';
import { DockerConfigCredentials } from '../../oci/auth/docker-config.ts';
import { inspectImage, type InspectResult } from '../../oci/inspect.ts';
import type { Compression } from '../../oci/media-types.ts';
import { formatPlatform, parsePlatform } from '../../oci/platform.ts';
import { pushDisk } from '../../oci/push.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';
import { imageImportCommand } from './image-import.ts';
import { byteProgress } from './progress.ts';

/**
 * `kupenstack image …`: VM disks in OCI registries. `push` publishes a disk
 * file as our disk artifact, `inspect` shows what a reference resolves to.
 * Other subcommands (import) are added with `imageCommand([...])` or
 * `.addCommand()` on the returned Command.
 */

interface RegistryOptions {
  insecure: boolean;
  dockerConfig?: string;
}

interface PushCliOptions extends RegistryOptions {
  osDistro?: string;
  osVersion?: string;
  osType?: string;
  arch?: string;
  minDisk?: string;
  minRam?: string;
  annotation: string[];
  compression?: Compression;
  quiet: boolean;
}

interface InspectCliOptions extends RegistryOptions {
  output: OutputFormat;
  platform?: string;
}

/** --insecure and --docker-config, shared by every image subcommand that talks to a registry. */
export function withRegistryOptions(cmd: Command): Command {
  return cmd
    .option('--insecure', 'plain HTTP to this registry (loopback test registries, air-gapped mirrors); TLS verification is never turned off', false)
    .option('--docker-config <file>', 'credentials from this docker config.json / .dockerconfigjson (default: $DOCKER_CONFIG/config.json when set)');
}

export function credentialsFrom(opts: RegistryOptions): DockerConfigCredentials | undefined {
  return DockerConfigCredentials.fromEnvironment(opts.dockerConfig);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseAnnotations(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--annotation "${item}": write key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

function wholeNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`${flag} ${value}: a whole number is expected`);
  return Number(value);
}

export function imagePushCommand(): Command {
  return withRegistryOptions(
    new Command('push')
      .description('publish a VM disk file (qcow2, raw, vmdk, …) as an OCI artifact that kupenstack, oras and skopeo read')
      .argument('<file>', 'the disk file')
      .argument('<ref>', 'registry/repository:tag'),
  )
    .option('--os-distro <distro>', 'os_distro (libosinfo id: ubuntu, fedora, debian, cirros, windows, …)')
    .option('--os-version <version>', 'os_version')
    .option('--os-type <type>', 'os_type (linux, windows; default from --os-distro)')
    .option('--arch <arch>', 'architecture (x86_64/amd64, aarch64/arm64, …)')
    .option('--min-disk <gb>', 'min_disk in GiB')
    .option('--min-ram <mb>', 'min_ram in MiB')
    .option('--annotation <key=value>', 'extra manifest annotation (repeatable), e.g. io.kupenstack.vmimage.property.hw_disk_bus=virtio', collect, [])
    .addOption(new Option('--compression <kind>', 'compress the layer (raw disks)').choices(['gzip', 'zstd']))
    .option('-q, --quiet', 'no progress output', false)
    .action(async (file: string, ref: string, opts: PushCliOptions) => {
      const progress = opts.quiet ? undefined : byteProgress('push');
      const minDiskGb = wholeNumber('--min-disk', opts.minDisk);
      const minRamMb = wholeNumber('--min-ram', opts.minRam);
      const credentials = credentialsFrom(opts);
      try {
        const result = await pushDisk(file, ref, {
          ...(opts.osDistro ? { osDistro: opts.osDistro } : {}),
          ...(opts.osVersion ? { osVersion: opts.osVersion } : {}),
          ...(opts.osType ? { osType: opts.osType } : {}),
          ...(opts.arch ? { arch: opts.arch } : {}),
          ...(minDiskGb !== undefined ? { minDiskGb } : {}),
          ...(minRamMb !== undefined ? { minRamMb } : {}),
          annotations: parseAnnotations(opts.annotation),
          ...(opts.compression ? { compression: opts.compression } : {}),
          insecure: opts.insecure,
          ...(credentials ? { credentials } : {}),
          ...(progress ? { onProgress: (b: number, t: number) => progress.update(b, t) } : {}),
        });
        progress?.stop();
        process.stdout.write(`pushed ${result.diskFormat} disk ${result.reference}${result.tag ? ` (tag ${result.tag})` : ''}, layer ${result.layer.digest} ${result.layer.size} bytes${result.uploaded === 0 ? ' (already in the registry)' : ''}\n`);
      } finally {
        progress?.stop();
      }
    });
}

function renderText(r: InspectResult): string {
  const lines = [
    `reference:     ${r.reference}`,
    ...(r.tag ? [`tag:           ${r.tag}`] : []),
    `digest:        ${r.digest}`,
    ...(r.indexDigest ? [`platform:      ${r.platform ? formatPlatform(r.platform) : '-'} (from index ${r.indexDigest})`] : []),
    `format:        ${r.format}`,
    `disk format:   ${r.diskFormat}${r.compression ? ` (${r.compression}-compressed layer)` : ''}`,
    `size:          ${r.size} bytes`,
    ...(r.virtualSize !== undefined ? [`virtual size:  ${r.virtualSize} bytes`] : []),
    `layer:         ${r.blob.digest} ${r.blob.mediaType} ${r.blob.size} bytes`,
  ];
  const props = Object.entries(r.properties);
  if (props.length > 0) lines.push('glance properties:', ...props.map(([k, v]) => `  ${k}=${v}`));
  if (r.minDisk !== undefined) lines.push(`min_disk:      ${r.minDisk} GiB`);
  if (r.minRam !== undefined) lines.push(`min_ram:       ${r.minRam} MiB`);
  for (const w of r.warnings ?? []) lines.push(`warning: ${w}`);
  return `${lines.join('\n')}\n`;
}

export function imageInspectCommand(): Command {
  return withRegistryOptions(
    new Command('inspect')
      .description('show what a reference resolves to: digest, packaging, disk format, size, annotations (the disk is not downloaded)')
      .argument('<ref>', 'registry/repository:tag or registry/repository@sha256:…'),
  )
    .addOption(outputOption())
    .option('--platform <os/arch>', 'platform to pick from a multi-arch index (default linux/amd64)')
    .action(async (ref: string, opts: InspectCliOptions) => {
      const credentials = credentialsFrom(opts);
      const result = await inspectImage(ref, {
        insecure: opts.insecure,
        ...(credentials ? { credentials } : {}),
        ...(opts.platform ? { platform: parsePlatform(opts.platform) } : {}),
      });
      if (opts.output === 'json') printJson(result);
      else process.stdout.write(renderText(result));
    });
}

export function imageCommand(extra: Command[] = []): Command {
  const cmd = new Command('image').description('VM disk images in OCI registries: push, inspect, import into Glance');
  cmd.addCommand(imagePushCommand());
  cmd.addCommand(imageInspectCommand());
  cmd.addCommand(imageImportCommand());
  for (const c of extra) cmd.addCommand(c);
  return cmd;
}
