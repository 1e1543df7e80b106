import { Command } from 'commander';
import { reconcileSync } from './cluster/sync-client.ts';
import { parseDuration } from '../util/duration.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';
import { printJson } from './output.ts';
import { describeTarget, syncTargetOf } from './sync-target.ts';

/**
 * `kupenstack reconcile sync NAME` (Flux's `flux reconcile kustomization`):
 * requests a run through the reconcile-requested-at annotation, waits for
 * the run that answers it, prints its result; exit code 1 when the Sync is
 * not Ready after it.
 */
export function reconcileCommand(): Command {
  const cmd = new Command('reconcile')
    .description('run a Sync in the cluster now, wait for it and print the result')
    .argument('<kind>', 'sync (a NamespaceSync with -n), or namespacesync')
    .argument('<name>', 'name of the Sync')
    .option('-n, --namespace <name>', "a tenant's NamespaceSync in this namespace")
    .option('--timeout <duration>', 'how long to wait for the run', '5m')
    .option('-o, --output <format>', 'text or json', 'text');
  addKubeOptions(cmd).action(async (kind: string, name: string, opts: KubeFlags & { timeout: string; output: string; namespace?: string }) => {
    const kc = kubeConfigFor(opts);
    const target = syncTargetOf('reconcile', kind, name, opts.namespace, kc);
    const what = describeTarget(target);
    const timeoutMs = parseDuration(opts.timeout);
    process.stderr.write(`► annotating ${what} in the cluster\n◎ waiting for the run (timeout ${opts.timeout})\n`);
    const { row, ok } = await reconcileSync(kc, target, { timeoutMs });
    if (opts.output === 'json') printJson(row);
    else process.stdout.write(ok ? `✔ ${what} reconciled: ${row.message}\n` : `✗ ${what} not Ready (${row.reason}): ${row.message}\n`);
    if (!ok) process.exitCode = 1;
  });
  return cmd;
}
