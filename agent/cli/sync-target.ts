import type { KubeConfig } from '@kubernetes/client-node';
import { KupenstackError } from '../errors.ts';
import type { SyncTarget } from './cluster/sync-client.ts';

/** The kinds `suspend`, `resume` and `reconcile` take: a cluster Sync, or a tenant's NamespaceSync. */
const syncKinds = ['sync', 'syncs', 'kssync'];
const namespaceSyncKinds = ['namespacesync', 'namespacesyncs', 'ksnssync'];

/**
 * Which Sync a command names (Flux's `-n` for a namespaced Kustomization): `sync NAME` is the cluster's Sync,
 * `sync NAME -n NS` and `namespacesync NAME [-n NS]` a NamespaceSync (in the context's namespace without -n).
 */
export function syncTargetOf(command: string, kind: string, name: string, namespace: string | undefined, kc: KubeConfig): SyncTarget {
  if (namespaceSyncKinds.includes(kind)) return { namespace: namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default', name };
  if (syncKinds.includes(kind)) return namespace ? { namespace, name } : name;
  throw new KupenstackError('cli.usage', `kupenstack ${command}: unknown kind "${kind}"; use: kupenstack ${command} sync NAME [-n NAMESPACE]`);
}

/** How messages name the target: `Sync apps`, `NamespaceSync team-a/apps`. */
export function describeTarget(t: SyncTarget): string {
  return typeof t === 'string' ? `Sync ${t}` : `NamespaceSync ${t.namespace}/${t.name}`;
}

/** The command that undoes or repeats it: `sync apps`, `sync apps -n team-a`. */
export function targetArgs(t: SyncTarget): string {
  return typeof t === 'string' ? `sync ${t}` : `sync ${t.name} -n ${t.namespace}`;
}
