import { Command } from 'commander';
import { setSuspended } from './cluster/sync-client.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';
import { describeTarget, syncTargetOf } from './sync-target.ts';

/** `kupenstack resume sync NAME [-n NAMESPACE]` (Flux's `flux resume kustomization`): spec.suspend: false. */
export function resumeCommand(): Command {
  const cmd = new Command('resume')
    .description('let a suspended Sync run again (spec.suspend: false); it runs at once')
    .argument('<kind>', 'sync (a NamespaceSync with -n), or namespacesync')
    .argument('<name>', 'name of the Sync')
    .option('-n, --namespace <name>', "a tenant's NamespaceSync in this namespace");
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags & { namespace?: string }) => {
    const kc = kubeConfigFor(opts);
    const target = syncTargetOf('resume', kind, name, opts.namespace, kc);
    const what = describeTarget(target);
    const changed = await setSuspended(kc, target, false);
    process.stdout.write(changed ? `✔ ${what} resumed: the controller runs it now\n` : `✔ ${what} was not suspended\n`);
  });
  return cmd;
}
