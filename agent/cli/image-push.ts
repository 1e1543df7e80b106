import { Command, Option } from 'commander';
import type { Compression } from '../../oci/media-types.ts';
import { pushDisk } from '../../oci/push.ts';
import { UsageError } from '../errors.ts';
import { byteProgress } from './progress.ts';
import { credentialsFrom, userAgent, withRegistryOptions, type RegistryOptions } from './registry-options.ts';

/** `kupenstack image push FILE REF`: a disk file as our OCI disk artifact (oras and skopeo read it too). */

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
          client: { userAgent },
          ...(credentials ? { credentials } : {}),
          ...(progress ? { onProgress: (b: number, t: number) => progress.update(b, t) } : {}),
        });
        progress?.stop();
        process.stdout.write(
          `pushed ${result.diskFormat} disk ${result.reference}${result.tag ? ` (tag ${result.tag})` : ''}, ` +
            `layer ${result.layer.digest} ${result.layer.size} bytes${result.uploaded === 0 ? ' (already in the registry)' : ''}\n`,
        );
      } finally {
        progress?.stop();
      }
    });
}
