import { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { toDiskRequest } from '../../oci/reference.ts';
import type { VerifiedAttestation } from '../../oci/attestation-policy.ts';
import type { VerifiedSignature } from '../../oci/signature-policy.ts';
import { importDisk } from '../glance/import.ts';
import { diskSourceFor } from '../glance/registry-source.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption, printJson } from './output.ts';
import { byteProgress, type Progress } from './progress.ts';
import { withRegistryOptions, type RegistryOptions } from './registry-options.ts';
import { loadVerifyPolicy } from './verify-policy.ts';
import { configureGlanceFrom, glanceDiskFormatOption, type GlanceOptions } from './glance-options.ts';

interface ImportCliOptions extends CloudOptions, RegistryOptions, GlanceOptions {
  project: string;
  name?: string;
  verify?: string;
  disk?: string;
  output: 'text' | 'json';
}

/**
 * `kupenstack image import REF --cloud NAME --project P`: one OCI disk into
 * Glance, streamed (constant memory), never twice for the same digest.
 * Progress bars on a terminal, plain lines otherwise.
 */
export function imageImportCommand(): Command {
  return withRegistryOptions(
    withCloudOptions(
      new Command('import')
        .description(
          'import a VM disk from an OCI registry into Glance (registry/repo:tag or registry/repo@sha256:…); the same digest is never transferred twice',
        )
        .argument('<ref>', 'OCI reference, e.g. 127.0.0.1:5050/vm/cirros:0.6 (Docker Hub short names such as cirros:0.6 work too)'),
    ),
  )
    .requiredOption('--project <name-or-id>', 'Keystone project that receives the image')
    .option('--name <name>', 'Glance image name (default: <repository basename>:<tag>)')
    .option('--disk <name>', 'the disk to import from a KubeVirt VM export with several (its volume name, io.kubevirt.disk.name)')
    .option(
      '--verify <file>',
      "import only when a cosign signature meets this policy: a YAML/JSON file holding what an Image's spec.verify holds (publicKey: {file: " +
        'cosign.pub}, or keyless: {trustedRoot: {file: trusted_root.json}, identity, issuer, …}; attestations: [{predicateType, conditions}, …])',
    )
    .addOption(outputOption())
    .addOption(glanceDiskFormatOption())
    .action(async (ref: string, opts: ImportCliOptions) => {
      // The reference first: a typo fails before any cloud is asked.
      configureGlanceFrom(opts);
      const request = { ...toDiskRequest(ref), ...(opts.insecure ? { insecure: true } : {}), ...(opts.disk !== undefined ? { disk: opts.disk } : {}) };
      // The policy too: a mistake in it fails before any registry or cloud is asked.
      const verify = opts.verify !== undefined ? await loadVerifyPolicy(opts.verify) : undefined;
      const { cloud: cloudName, cloudsFile } = resolveCloud(opts);
      const cloud = OpenStackCloud.fromCloudsYaml(cloudName, cloudsFile);
      const projectId = await findProject(cloud, opts.project);
      let progress: Progress | undefined;
      let signature: VerifiedSignature | undefined;
      let attested: VerifiedAttestation[] | undefined;
      let total = 0;
      try {
        const result = await importDisk(
          { image: cloud.client('image', { projectId }), projectId },
          diskSourceFor({ dockerConfig: opts.dockerConfig }),
          request,
          {
            name: opts.name,
            verify: verify?.signature,
            onVerified: (v) => {
              signature = v;
              if (opts.output !== 'json') process.stderr.write(`verified ${v.digest}: signed by ${v.key} (${v.where})\n`);
            },
            attestations: verify?.attestations,
            onAttested: (found) => {
              attested = found;
              if (opts.output === 'json') return;
              for (const a of found) process.stderr.write(`attested ${a.predicateType}: signed by ${a.signer} (${a.where})\n`);
            },
            onResolved: (info) => {
              total = info.size ?? 0;
              if (opts.output !== 'json') process.stderr.write(`resolved ${info.reference}\n`);
            },
            onProgress: (p) => {
              if (opts.output === 'json') return;
              progress ??= byteProgress('upload');
              progress.update(p.bytesSent, Math.max(p.total ?? total, p.bytesSent));
            },
          },
        );
        progress?.stop();
        progress = undefined;
        const out = {
          id: result.image.id,
          name: result.image.name,
          status: result.image.status,
          size: result.image.size,
          manifestDigest: result.manifestDigest,
          reused: result.reused,
          blobBytes: result.blobBytes,
          ...(signature ? { signature } : {}),
          ...(attested && attested.length > 0 ? { attestations: attested } : {}),
        };
        if (opts.output === 'json') printJson(out);
        else
          process.stdout.write(
            `${result.reused ? 'reused' : 'imported'} ${ref} → Glance image ${out.id} (${String(out.name)}, ${String(out.size)} bytes${result.reused ? ', nothing downloaded' : ''})\n`,
          );
      } finally {
        progress?.stop();
      }
    });
}

export async function findProject(cloud: OpenStackCloud, nameOrId: string): Promise<string> {
  const byId = await cloud.identity.find<{ project: { id: string } }>(`/projects/${encodeURIComponent(nameOrId)}`);
  if (byId) return byId.project.id;
  const byName = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: nameOrId });
  if (byName.length !== 1)
    throw new UsageError(
      `--project ${nameOrId}: ${byName.length === 0 ? 'no Keystone project has this name or id' : 'several projects have this name (other domains); pass the id'}`,
    );
  return byName[0]!.id;
}
