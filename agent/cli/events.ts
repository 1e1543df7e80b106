import { Command } from 'commander';
import { stringify } from 'yaml';
import { listEvents } from './cluster/event-client.ts';
import { addKubeOptions, addNamespaceOptions, kubeConfigFor, namespaceOf, type KubeFlags, type NamespaceFlags } from './kube-options.ts';
import { columns, printJson } from './output.ts';

/**
 * `kupenstack events [-n NS | -A]` (Flux's `flux events`): the Events
 * recorded on KupenStack objects, oldest first, in kubectl's columns.
 * OpenStackCloud and Sync Events are in the `default` namespace (they are
 * cluster-scoped), so `-A` shows everything.
 */
export function eventsCommand(): Command {
  const cmd = new Command('events').description('list the Events recorded on KupenStack objects').option('-o, --output <format>', 'text, json or yaml', 'text');
  addNamespaceOptions(addKubeOptions(cmd)).action(async (opts: KubeFlags & NamespaceFlags & { output: string }) => {
    const kc = kubeConfigFor(opts);
    const namespace = namespaceOf(opts, kc);
    const rows = await listEvents(kc, namespace);
    if (opts.output === 'json') return printJson(rows);
    if (opts.output === 'yaml') return void process.stdout.write(stringify(rows));
    if (rows.length === 0) return void process.stdout.write(`No events found${namespace ? ` in ${namespace} namespace` : ''}.\n`);
    const all = namespace === undefined;
    const head = [...(all ? ['NAMESPACE'] : []), 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
    process.stdout.write(
      columns(
        head,
        rows.map((r) => [...(all ? [r.namespace] : []), r.lastSeen, r.type, r.reason, r.object, r.message]),
      ),
    );
  });
  return cmd;
}
