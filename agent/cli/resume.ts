import { Command } from 'commander';
import { KupenstackError } from '../errors.ts';
import { setSuspended } from './cluster/sync-client.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';

/** `kupenstack resume sync NAME` (Flux's `flux resume kustomization`): spec.suspend: false. */
export function resumeCommand(): Command {
  const cmd = new Command('resume')
    .description('let a suspended Sync run again (spec.suspend: false); it runs at once')
    .argument('<kind>', 'sync')
    .argument('<name>', 'name of the Sync');
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags) => {
    if (kind !== 'sync' && kind !== 'syncs')
      throw new KupenstackError('cli.usage', `kupenstack resume: unknown kind "${kind}"; use: kupenstack resume sync NAME`);
    const changed = await setSuspended(kubeConfigFor(opts), name, false);
    process.stdout.write(changed ? `✔ Sync ${name} resumed: the controller runs it now\n` : `✔ Sync ${name} was not suspended\n`);
  });
  return cmd;
}
