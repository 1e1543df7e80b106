import { Command } from 'commander';
import { pushManifests } from '../../oci/push-manifests.ts';
import { collect, parseAnnotations } from './image-push.ts';
import { credentialsFrom, userAgent, withRegistryOptions, type RegistryOptions } from './registry-options.ts';

/**
 * `kupenstack push manifests DIR REF`: a folder as Flux's manifests artifact
 * (reproducible: the same folder gives the same digest), for a Sync's
 * `source.oci` or Flux's OCIRepository. Prints `registry/repo@sha256:…`
 * on the last line, what `cosign sign` takes.
 */

interface PushManifestsCliOptions extends RegistryOptions {
  annotation: string[];
}

export function pushManifestsCommand(): Command {
  return withRegistryOptions(
    new Command('manifests')
      .description("publish a folder of manifests as an OCI artifact (Flux's `flux push artifact` format) for a Sync's source.oci")
      .argument('<dir>', 'the folder of manifests')
      .argument('<ref>', 'registry/repository:tag (oci:// allowed)'),
  )
    .option('--annotation <key=value>', 'manifest annotation (repeatable), e.g. org.opencontainers.image.revision=main@sha1:<commit>', collect, [])
    .action(async (dir: string, ref: string, opts: PushManifestsCliOptions) => {
      const credentials = credentialsFrom(opts);
      const result = await pushManifests(dir, ref.replace(/^oci:\/\//, ''), {
        annotations: parseAnnotations(opts.annotation),
        insecure: opts.insecure,
        client: { userAgent },
        ...(credentials ? { credentials } : {}),
      });
      process.stdout.write(
        `pushed ${result.files.length} files (layer ${result.layer.digest}, ${result.layer.size} bytes) as ${result.tag ?? ''}\n${result.reference}\n`,
      );
    });
}
