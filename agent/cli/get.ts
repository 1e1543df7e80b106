import { Command, Option } from 'commander';
import { stringify } from 'yaml';
import { KupenstackError } from '../errors.ts';
import { listResources, type ResourceRow } from './cluster/resource-client.ts';
import { listSyncs, rowOf, type SyncRow } from './cluster/sync-client.ts';
import { sharedSchemaRegistry } from '../schema/registry.ts';
import { addKubeOptions, addNamespaceOptions, kubeConfigFor, namespaceOf, type KubeFlags, type NamespaceFlags } from './kube-options.ts';
import { columns, printJson } from './output.ts';

/**
 * `kupenstack get syncs` (Flux's `flux get kustomizations`): one line per
 * Sync with the columns `kubectl get syncs` prints (the CRD's printer
 * columns: revision, suspended, Ready, the wait counts, message, age);
 * `-o wide` adds the Ready reason, `-o json|yaml` the rows as data.
 * `kupenstack get resources [-n NS | -A]`: every KupenStack custom resource
 * with its Ready condition and OpenStack id (the current context's
 * namespace by default, as kubectl).
 */
export function getCommand(): Command {
  const cmd = new Command('get')
    .description('list KupenStack objects in the cluster (syncs, resources)')
    .argument('<kind>', 'what to list: syncs or resources')
    .option('-l, --selector <selector>', 'label selector, as kubectl -l (syncs)');
  // Syncs: the cluster's, and the NamespaceSyncs of -n NAMESPACE (or every namespace with -A); without either, the cluster's only.
  cmd.addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'wide', 'json', 'yaml']).default('text'));
  addNamespaceOptions(addKubeOptions(cmd)).action(
    async (kind: string, opts: KubeFlags & NamespaceFlags & { selector?: string; output: 'text' | 'wide' | 'json' | 'yaml' }) => {
      const kc = kubeConfigFor(opts);
      let rows: SyncRow[] | ResourceRow[];
      let text: () => string;
      if (['syncs', 'sync', 'kssync'].includes(kind)) {
        const namespaces = opts.allNamespaces ? 'all' : opts.namespace;
        const syncs = (await listSyncs(kc, opts.selector, namespaces)).map((s) => rowOf(s));
        [rows, text] = [syncs, () => (syncs.length === 0 ? 'No Syncs found.\n' : table(syncs, opts.output === 'wide'))];
      } else if (['resources', 'resource', 'all'].includes(kind)) {
        const namespace = namespaceOf(opts, kc);
        const resources = await listResources(kc, sharedSchemaRegistry(), namespace);
        const none = `No KupenStack resources found${namespace ? ` in ${namespace} namespace` : ''}.\n`;
        [rows, text] = [resources, () => (resources.length === 0 ? none : resourceTable(resources, namespace === undefined, opts.output === 'wide'))];
      } else
        throw new KupenstackError(
          'cli.usage',
          `kupenstack get: unknown kind "${kind}"; use: kupenstack get syncs, or kupenstack get resources [-n NAMESPACE | -A]`,
        );
      if (opts.output === 'json') return printJson(rows);
      if (opts.output === 'yaml') return void process.stdout.write(stringify(rows));
      process.stdout.write(text());
    },
  );
  return cmd;
}

/** KIND/NAME as kubectl names objects of several kinds, READY, the OpenStack id, message and age; -A adds NAMESPACE, -o wide the reason. */
function resourceTable(rows: ResourceRow[], allNamespaces: boolean, wide: boolean): string {
  const none = '<none>';
  const head = [...(allNamespaces ? ['NAMESPACE'] : []), 'NAME', 'READY', ...(wide ? ['REASON'] : []), 'OPENSTACK ID', 'MESSAGE', 'AGE'];
  const cells = rows.map((r) => [
    ...(allNamespaces ? [r.namespace] : []),
    `${r.kind.toLowerCase()}/${r.name}`,
    r.ready,
    ...(wide ? [r.reason || none] : []),
    r.id || none,
    r.message.replace(/\s+/g, ' ') || none,
    r.age,
  ]);
  return columns(head, cells);
}

export function table(rows: SyncRow[], wide: boolean): string {
  const none = '<none>';
  // With tenants' NamespaceSyncs listed, a NAMESPACE column as kubectl -A prints (a cluster Sync has none).
  const namespaced = rows.some((r) => r.namespace !== undefined);
  const head = [
    ...(namespaced ? ['NAMESPACE'] : []),
    'NAME',
    'REVISION',
    'SUSPENDED',
    'READY',
    ...(wide ? ['REASON'] : []),
    'OBJECTS READY',
    'STALLED',
    'MESSAGE',
    'AGE',
  ];
  const cells = rows.map((r) => [
    ...(namespaced ? [r.namespace ?? '(cluster)'] : []),
    r.name,
    r.revision || none,
    String(r.suspended),
    r.ready,
    ...(wide ? [r.reason || none] : []),
    r.readyObjects === undefined ? none : String(r.readyObjects),
    r.stalled === undefined ? none : String(r.stalled),
    r.message.replace(/\s+/g, ' ') || none,
    r.age,
  ]);
  return columns(head, cells);
}
