import { Command } from 'commander';
import { KupenstackError } from '../errors.ts';
import { reconcileSync } from './cluster/sync-client.ts';
import { parseDuration } from '../util/duration.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';
import { printJson } from './output.ts';

/**
 * `kupenstack reconcile sync NAME` (Flux's `flux reconcile kustomization`):
 * requests a run through the reconcile-requested-at annotation, waits for
 * the run that answers it, prints its result; exit code 1 when the Sync is
 * not Ready after it.
 */
export function reconcileCommand(): Command {
  const cmd = new Command('reconcile')
    .description('run a Sync in the cluster now, wait for it and print the result')
    .argument('<kind>', 'sync')
    .argument('<name>', 'name of the Sync')
    .option('--timeout <duration>', 'how long to wait for the run', '5m')
    .option('-o, --output <format>', 'text or json', 'text');
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags & { timeout: string; output: string }) => {
    if (kind !== 'sync' && kind !== 'syncs')
      throw new KupenstackError('cli.usage', `kupenstack reconcile: unknown kind "${kind}"; use: kupenstack reconcile sync NAME`);
    const timeoutMs = parseDuration(opts.timeout);
    process.stderr.write(`► annotating Sync ${name} in the cluster\n◎ waiting for the run (timeout ${opts.timeout})\n`);
    const { row, ok } = await reconcileSync(kubeConfigFor(opts), name, { timeoutMs });
    if (opts.output === 'json') printJson(row);
    else process.stdout.write(ok ? `✔ Sync ${name} reconciled: ${row.message}\n` : `✗ Sync ${name} not Ready (${row.reason}): ${row.message}\n`);
    if (!ok) process.exitCode = 1;
  });
  return cmd;
}
