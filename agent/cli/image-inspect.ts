import { Command } from 'commander';
import { inspectImage, type InspectResult } from '../../oci/inspect.ts';
import { formatPlatform, parsePlatform } from '../../oci/platform.ts';
import { diskSourceFor } from '../glance/registry-source.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';
import { withRegistryOptions, type RegistryOptions } from './registry-options.ts';

/** `kupenstack image inspect REF`: what a reference resolves to; the disk is not downloaded. */

interface InspectCliOptions extends RegistryOptions {
  output: OutputFormat;
  platform?: string;
  disk?: string;
}

function renderText(r: InspectResult): string {
  const lines = [
    `reference:     ${r.reference}`,
    ...(r.tag ? [`tag:           ${r.tag}`] : []),
    `digest:        ${r.digest}`,
    ...(r.indexDigest ? [`platform:      ${r.platform ? formatPlatform(r.platform) : '-'} (from index ${r.indexDigest})`] : []),
    `format:        ${r.format}`,
    ...(r.diskName !== undefined ? [`disk name:     ${r.diskName}`] : []),
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
    .option('--disk <name>', 'the disk to show of a KubeVirt VM export with several (its volume name, io.kubevirt.disk.name)')
    .action(async (ref: string, opts: InspectCliOptions) => {
      const result = await inspectImage(ref, {
        insecure: opts.insecure,
        source: diskSourceFor({ dockerConfig: opts.dockerConfig }),
        ...(opts.platform ? { platform: parsePlatform(opts.platform) } : {}),
        ...(opts.disk !== undefined ? { disk: opts.disk } : {}),
      });
      if (opts.output === 'json') printJson(result);
      else process.stdout.write(renderText(result));
    });
}
