import { Command } from 'commander';
import { stringify } from 'yaml';
import { KupenstackError } from '../errors.ts';
import { syncTree, type SyncTree } from './cluster/resource-client.ts';
import { sharedSchemaRegistry } from '../schema/registry.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';
import { printJson } from './output.ts';

/**
 * `kupenstack tree sync NAME` (Flux's `flux tree kustomization`): the Sync,
 * then each object it applied (its inventory) with its Ready condition and
 * the OpenStack id it is reconciled to, grouped by namespace.
 */
export function treeCommand(): Command {
  const cmd = new Command('tree')
    .description('show a Sync, the objects it applied and their OpenStack ids')
    .argument('<kind>', 'sync')
    .argument('<name>', 'name of the Sync')
    .option('-o, --output <format>', 'text, json or yaml', 'text');
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags & { output: string }) => {
    if (kind !== 'sync' && kind !== 'syncs') throw new KupenstackError('cli.usage', `kupenstack tree: unknown kind "${kind}"; use: kupenstack tree sync NAME`);
    const tree = await syncTree(kubeConfigFor(opts), sharedSchemaRegistry(), name);
    if (opts.output === 'json') return printJson(tree);
    if (opts.output === 'yaml') return void process.stdout.write(stringify(tree));
    process.stdout.write(render(tree));
  });
  return cmd;
}

function render(tree: SyncTree): string {
  const s = tree.sync;
  const lines = [`Sync/${s.name} (Ready ${s.ready}${s.revision ? `, ${s.revision}` : ''})`];
  const namespaces = [...new Set(tree.objects.map((o) => o.namespace))].sort();
  namespaces.forEach((ns, i) => {
    const lastNs = i === namespaces.length - 1;
    const objects = tree.objects.filter((o) => o.namespace === ns).sort((a, b) => a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
    lines.push(`${lastNs ? '└──' : '├──'} ${ns ? `Namespace/${ns}` : '(cluster)'}`);
    objects.forEach((o, j) => {
      const state = o.ready === 'True' ? 'Ready' : o.ready === 'Missing' ? 'Missing' : `not Ready${o.reason ? ` (${o.reason})` : ''}`;
      lines.push(
        `${lastNs ? '    ' : '│   '}${j === objects.length - 1 ? '└──' : '├──'} ${o.kind}/${o.name}  ${state}  ${o.id ? `openstack ${o.id}` : 'no OpenStack id yet'}`,
      );
    });
  });
  if (tree.objects.length === 0) lines.push('└── (no objects applied)');
  return `${lines.join('\n')}\n`;
}
