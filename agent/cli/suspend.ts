import { Command } from 'commander';
import { KupenstackError } from '../errors.ts';
import { setSuspended } from './cluster/sync-client.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';

/** `kupenstack suspend sync NAME` (Flux's `flux suspend kustomization`): spec.suspend: true. */
export function suspendCommand(): Command {
  const cmd = new Command('suspend')
    .description('stop the applies and prunes of a Sync in the cluster (spec.suspend: true)')
    .argument('<kind>', 'sync')
    .argument('<name>', 'name of the Sync');
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags) => {
    if (kind !== 'sync' && kind !== 'syncs')
      throw new KupenstackError('cli.usage', `kupenstack suspend: unknown kind "${kind}"; use: kupenstack suspend sync NAME`);
    const changed = await setSuspended(kubeConfigFor(opts), name, true);
    process.stdout.write(
      changed ? `✔ Sync ${name} suspended: nothing is applied or pruned until kupenstack resume sync ${name}\n` : `✔ Sync ${name} already suspended\n`,
    );
  });
  return cmd;
}
