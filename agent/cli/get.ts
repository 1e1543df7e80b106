import { Command, Option } from 'commander';
import { stringify } from 'yaml';
import { KupenstackError } from '../errors.ts';
import { listSyncs, rowOf, type SyncRow } from '../gitops/sync-client.ts';
import { addKubeOptions, kubeConfigFor, type KubeFlags } from './kube-options.ts';
import { printJson } from './output.ts';

/**
 * `kupenstack get syncs` (Flux's `flux get kustomizations`): one line per
 * Sync with the columns `kubectl get syncs` prints (the CRD's printer
 * columns: revision, suspended, Ready, the wait counts, message, age);
 * `-o wide` adds the Ready reason, `-o json|yaml` the rows as data.
 */
export function getCommand(): Command {
  const cmd = new Command('get').description('list KupenStack resources in the cluster (syncs)').argument('<kind>', 'what to list: syncs').option('-l, --selector <selector>', 'label selector, as kubectl -l');
  cmd.addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'wide', 'json', 'yaml']).default('text'));
  addKubeOptions(cmd).action(async (kind: string, opts: KubeFlags & { selector?: string; output: 'text' | 'wide' | 'json' | 'yaml' }) => {
    if (!['syncs', 'sync', 'kssync'].includes(kind)) throw new KupenstackError('cli.usage', `kupenstack get: unknown kind "${kind}"; use: kupenstack get syncs`);
    const rows = (await listSyncs(kubeConfigFor(opts), opts.selector)).map((s) => rowOf(s));
    if (opts.output === 'json') return printJson(rows);
    if (opts.output === 'yaml') return void process.stdout.write(stringify(rows));
    process.stdout.write(rows.length === 0 ? 'No Syncs found.\n' : table(rows, opts.output === 'wide'));
  });
  return cmd;
}

export function table(rows: SyncRow[], wide: boolean): string {
  const none = '<none>';
  const head = ['NAME', 'REVISION', 'SUSPENDED', 'READY', ...(wide ? ['REASON'] : []), 'OBJECTS READY', 'STALLED', 'MESSAGE', 'AGE'];
  const cells = rows.map((r) => [r.name, r.revision || none, String(r.suspended), r.ready, ...(wide ? [r.reason || none] : []), r.readyObjects === undefined ? none : String(r.readyObjects), r.stalled === undefined ? none : String(r.stalled), r.message.replace(/\s+/g, ' ') || none, r.age]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  // kubectl's layout: columns three spaces apart, the last one not padded.
  const line = (c: string[]): string => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]! + 3))).join('').trimEnd();
  return `${[head, ...cells].map(line).join('\n')}\n`;
}
