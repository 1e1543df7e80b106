import { Command } from 'commander';
import { setSuspended } from './cluster/sync-client.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';
import { describeTarget, syncTargetOf, targetArgs } from './sync-target.ts';

/** `kupenstack suspend sync NAME [-n NAMESPACE]` (Flux's `flux suspend kustomization`): spec.suspend: true. */
export function suspendCommand(): Command {
  const cmd = new Command('suspend')
    .description('stop the applies and prunes of a Sync in the cluster (spec.suspend: true)')
    .argument('<kind>', 'sync (a NamespaceSync with -n), or namespacesync')
    .argument('<name>', 'name of the Sync')
    .option('-n, --namespace <name>', "a tenant's NamespaceSync in this namespace");
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags & { namespace?: string }) => {
    const kc = kubeConfigFor(opts);
    const target = syncTargetOf('suspend', kind, name, opts.namespace, kc);
    const what = describeTarget(target);
    const changed = await setSuspended(kc, target, true);
    process.stdout.write(
      changed ? `✔ ${what} suspended: nothing is applied or pruned until kupenstack resume ${targetArgs(target)}\n` : `✔ ${what} already suspended\n`,
    );
  });
  return cmd;
}
