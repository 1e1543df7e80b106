import { existsSync, readdirSync } from 'node:fs';
import { Command, Option } from 'commander';
import { UsageError } from '../errors.ts';
import { exportNamespaces, type ExportedNamespace, type ExportTally } from '../export/export.ts';
import { writeExport, type ExportLayout } from '../export/write.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';

interface ExportOptions extends CloudOptions {
  project: string[];
  namespace: string[];
  layout: ExportLayout;
  projectPrefix?: string;
  output: OutputFormat;
}

/** The command to run next, with the cloud options this export was given: the manifests name their projects, so no prefix is needed. */
function nextCommand(verb: 'plan' | 'apply', dir: string, opts: ExportOptions, cloud: string): string {
  const q = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  const extra = [
    ...(opts.clouds ? ['--clouds', opts.clouds] : []),
    ...(opts.config ? ['-c', opts.config] : []),
    ...(opts.owner ? ['--owner', opts.owner] : []),
  ];
  return ['kupenstack', verb, dir, '--cloud', cloud, ...extra].map(q).join(' ');
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** `kupenstack export --project P [--project Q] DIR`: existing projects → a folder of manifests that adopt them. */
export function exportCommand(): Command {
  return withCloudOptions(
    new Command('export')
      .description(
        'write existing OpenStack projects as manifests (one namespace per project) that adopt their objects: plan shows only adopt, apply writes only ownership markers',
      )
      .argument('<dir>', 'the folder to write (created; must be empty or absent)')
      .option('--project <name-or-id>', 'a Keystone project to export (repeatable)', collect, [])
      .option('--namespace <project=namespace>', 'the namespace of a project (repeatable); default: its name without the project prefix', collect, [])
      .option(
        '--project-prefix <prefix>',
        "the prefix stripped from project names to make the namespace (default: the config's projectPrefix); apply needs none: each manifest names its project",
      )
      .addOption(new Option('--layout <layout>', 'one file per kind or per object').choices(['kind', 'object']).default('kind'))
      .addOption(outputOption()),
  ).action(async (dir: string, opts: ExportOptions) => {
    if (opts.project.length === 0) throw new UsageError('no project given: pass --project NAME (repeatable)');
    if (existsSync(dir) && readdirSync(dir).length > 0) throw new UsageError(`${dir} is not empty: export into a new folder`);
    const namespaces = new Map<string, string>();
    for (const pair of opts.namespace) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new UsageError(`--namespace ${pair}: write PROJECT=NAMESPACE`);
      namespaces.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const { config, cloud: cloudName, cloudsFile } = resolveCloud(opts);
    const cloud = OpenStackCloud.fromCloudsYaml(cloudName, cloudsFile);
    const prefix = opts.projectPrefix ?? config.projectPrefix;
    const result: ExportTally = { skipped: [], notes: [], calls: {} };
    const counts: { namespace: string; project: { id: string; name: string }; manifests: number }[] = [];
    // Streamed: each namespace is written, counted and let go before the next is built.
    async function* counted(): AsyncGenerator<ExportedNamespace> {
      for await (const n of exportNamespaces({ cloud, projects: opts.project, projectPrefix: prefix, namespaces }, result)) {
        counts.push({ namespace: n.namespace, project: n.project, manifests: n.manifests.length });
        yield n;
      }
    }
    const files = await writeExport(dir, counted(), opts.layout);
    if (opts.output === 'json')
      printJson({ dir, projectPrefix: prefix, namespaces: counts, files, skipped: result.skipped, notes: result.notes, calls: result.calls });
    else {
      for (const n of counts) process.stdout.write(`${n.namespace}: ${n.manifests} manifests from project ${n.project.name} (${n.project.id})\n`);
      for (const s of result.skipped) process.stdout.write(`skipped ${s}\n`);
      for (const n of result.notes) process.stdout.write(`note    ${n}\n`);
      process.stdout.write(
        `wrote ${files.length} files to ${dir}; next: ${nextCommand('plan', dir, opts, cloudName)} (one adopt per object), then ${nextCommand('apply', dir, opts, cloudName)}\n`,
      );
    }
  });
}
