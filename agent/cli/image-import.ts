import { Command } from 'commander';
import cliProgress from 'cli-progress';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { importDisk, parseReference } from '../kinds/image-oci-import.ts';
import { diskSourceFor } from '../kinds/image-oci-source.ts';
import { UsageError } from '../errors.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption, printJson } from './output.ts';

interface ImportCliOptions extends CloudOptions {
  project: string;
  name?: string;
  insecure: boolean;
  dockerConfig?: string;
  output: 'text' | 'json';
}

/**
 * `kupenstack image import REF --cloud NAME --project P`: one OCI disk into
 * Glance, streamed (constant memory), never twice for the same digest.
 * Progress bars on a terminal, plain lines otherwise.
 */
export function imageImportCommand(): Command {
  return withCloudOptions(
    new Command('import')
      .description('import a VM disk from an OCI registry into Glance (registry/repo:tag or registry/repo@sha256:…); the same digest is never transferred twice')
      .argument('<ref>', 'OCI reference, e.g. 127.0.0.1:5050/vm/cirros:0.6'),
  )
    .requiredOption('--project <name-or-id>', 'Keystone project that receives the image')
    .option('--name <name>', 'Glance image name (default: <repository basename>:<tag>)')
    .option('--insecure', 'plain HTTP to the registry (test registries only)', false)
    .option('--docker-config <file>', 'docker config.json with the registry credentials (default: anonymous)')
    .addOption(outputOption())
    .action(async (ref: string, opts: ImportCliOptions) => {
      const { cloud: cloudName, cloudsFile } = resolveCloud(opts);
      const cloud = OpenStackCloud.fromCloudsYaml(cloudName, cloudsFile);
      const projectId = await findProject(cloud, opts.project);
      const apis = await cloud.forProject(projectId);
      const request = { ...parseReference(ref), ...(opts.insecure ? { insecure: true } : {}) };
      const progress = reporter(opts.output === 'json' ? undefined : process.stderr);
      try {
        const result = await importDisk({ image: apis.image, compute: apis.compute, projectId }, diskSourceFor({ dockerConfig: opts.dockerConfig }), request, {
          name: opts.name,
          onResolved: progress.resolved,
          onProgress: progress.tick,
        });
        progress.stop();
        const out = { id: result.image.id, name: result.image.name, status: result.image.status, size: result.image.size, manifestDigest: result.manifestDigest, reused: result.reused, blobBytes: result.blobBytes };
        if (opts.output === 'json') printJson(out);
        else process.stdout.write(`${result.reused ? 'reused' : 'imported'} ${ref} → Glance image ${out.id} (${String(out.name)}, ${String(out.size)} bytes${result.reused ? ', nothing downloaded' : ''})\n`);
      } finally {
        progress.stop();
      }
    });
}

async function findProject(cloud: OpenStackCloud, nameOrId: string): Promise<string> {
  const byId = await cloud.identity.find<{ project: { id: string } }>(`/projects/${encodeURIComponent(nameOrId)}`);
  if (byId) return byId.project.id;
  const byName = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: nameOrId });
  if (byName.length !== 1) throw new UsageError(`--project ${nameOrId}: ${byName.length === 0 ? 'no Keystone project has this name or id' : 'several projects have this name (other domains); pass the id'}`);
  return byName[0]!.id;
}

interface Reporter {
  resolved: (info: { reference: string; manifestDigest: string; size?: number | undefined }) => void;
  tick: (p: { bytesSent: number; total?: number | undefined }) => void;
  stop: () => void;
}

const mib = (n: number): string => `${(n / 1048576).toFixed(0)} MiB`;

/** A bar on a terminal; elsewhere one line per 10 % (or per 256 MiB when the size is unknown). */
function reporter(out: NodeJS.WriteStream | undefined): Reporter {
  if (!out) return { resolved: () => undefined, tick: () => undefined, stop: () => undefined };
  let bar: cliProgress.SingleBar | undefined;
  let lastLine = 0;
  let total: number | undefined;
  const started = Date.now();
  return {
    resolved: (info) => {
      total = info.size;
      out.write(`resolved ${info.reference}\n`);
      if (out.isTTY) {
        bar = new cliProgress.SingleBar({ stream: out, format: 'upload [{bar}] {percentage}% | {done} of {all} | {rate}', hideCursor: true }, cliProgress.Presets.shades_classic);
        bar.start(total ?? 0, 0, { done: '0 MiB', all: total ? mib(total) : '?', rate: '' });
      }
    },
    tick: (p) => {
      const rate = `${mib(p.bytesSent / Math.max(0.001, (Date.now() - started) / 1000))}/s`;
      if (bar) {
        if (p.total && p.total !== total) bar.setTotal((total = p.total));
        bar.update(p.bytesSent, { done: mib(p.bytesSent), rate });
        return;
      }
      const step = total ? total / 10 : 256 * 1048576;
      if (p.bytesSent - lastLine >= step) {
        lastLine = p.bytesSent;
        out.write(`uploaded ${mib(p.bytesSent)}${total ? ` of ${mib(total)}` : ''} (${rate})\n`);
      }
    },
    stop: () => {
      bar?.stop();
      bar = undefined;
    },
  };
}
