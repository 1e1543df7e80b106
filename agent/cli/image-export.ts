import { Command, Option } from 'commander';
import { exportImage, findGlanceImage, type ExportFormat } from '../glance/export.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { findProject } from './image-import.ts';
import { UsageError } from '../errors.ts';
import { outputOption, printJson } from './output.ts';
import { byteProgress } from './progress.ts';
import { credentialsFrom, userAgent, withRegistryOptions, type RegistryOptions } from './registry-options.ts';

interface ExportCliOptions extends CloudOptions, RegistryOptions {
  project: string;
  output: 'text' | 'json';
  format: ExportFormat;
  diskName?: string;
}

/**
 * `kupenstack image export GLANCE_IMAGE REF --cloud NAME --project P`: a
 * Glance image to a registry as the artifact `image push` makes, streamed
 * (constant memory) and checked against Glance's own hashes on the way.
 */
export function imageExportCommand(): Command {
  return withRegistryOptions(
    withCloudOptions(
      new Command('export')
        .description(
          "export a Glance image to an OCI registry as a KupenStack disk artifact, or as KubeVirt's OCI VM export (--format kubevirt); the reverse of import; the data is checked against Glance's checksum and os_hash_value",
        )
        .argument('<glance-image>', 'Glance image id, or its name in the project')
        .argument('<ref>', 'registry/repository:tag to push to'),
    ),
  )
    .requiredOption('--project <name-or-id>', 'Keystone project the image belongs to (or is shared with)')
    .addOption(
      new Option(
        '--format <format>',
        "kupenstack: KupenStack's disk artifact; kubevirt: KubeVirt's OCI VM export (a VirtualMachine and its disk as a raw+zstd layer; raw images only)",
      )
        .choices(['kupenstack', 'kubevirt'])
        .default('kupenstack'),
    )
    .option('--disk-name <name>', 'with --format kubevirt: the volume name of the disk (io.kubevirt.disk.name; default rootdisk)')
    .addOption(outputOption())
    .action(async (glanceImage: string, ref: string, opts: ExportCliOptions) => {
      if (opts.diskName !== undefined && opts.format !== 'kubevirt') throw new UsageError('--disk-name is for --format kubevirt only');
      const { cloud: cloudName, cloudsFile } = resolveCloud(opts);
      const cloud = OpenStackCloud.fromCloudsYaml(cloudName, cloudsFile);
      const projectId = await findProject(cloud, opts.project);
      const image = cloud.client('image', { projectId });
      const found = await findGlanceImage(image, glanceImage, projectId);
      const progress = opts.output === 'json' ? undefined : byteProgress('export');
      const credentials = credentialsFrom(opts);
      try {
        const result = await exportImage(image, found, ref, {
          insecure: opts.insecure,
          format: opts.format,
          ...(opts.diskName !== undefined ? { diskName: opts.diskName } : {}),
          client: { userAgent },
          ...(credentials ? { credentials } : {}),
          ...(progress ? { onProgress: (b: number, t: number) => progress.update(b, Math.max(b, t)) } : {}),
        });
        progress?.stop();
        if (opts.output === 'json') printJson(result);
        else
          process.stdout.write(
            `exported Glance image ${result.imageId} → ${result.reference}${result.tag ? ` (tag ${result.tag})` : ''}, ` +
              `${result.indexDigest !== undefined ? `KubeVirt VM export, ${result.diskFormat}+zstd` : result.diskFormat} layer ${result.layer.digest} ${result.layer.size} bytes, checked against Glance's ${result.verified.join(' and ') || 'nothing (it records no hash)'}\n`,
          );
      } finally {
        progress?.stop();
      }
    });
}
