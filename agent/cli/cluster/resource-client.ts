import * as k8s from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../../kube/errors.ts';
import { group, version, type SchemaRegistry } from '../../schema/registry.ts';
import type { InventoryEntry } from '../../controller/syncs/inventory.ts';
import { age, rowOf, SyncNotFoundError, type SyncRow } from './sync-client.ts';

/**
 * What `kupenstack get resources` and `kupenstack tree sync` read (Flux's
 * `flux tree kustomization`, `kubectl get` over every KupenStack kind): the
 * custom resources as their status says, with the OpenStack id each one
 * holds. Plain functions over a KubeConfig; the CLI files print.
 */

interface ResourceObject {
  metadata: { name: string; namespace?: string; creationTimestamp?: Date | string };
  status?: { id?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

export interface ResourceRow {
  namespace: string;
  kind: string;
  name: string;
  ready: string;
  reason: string;
  /** The OpenStack id the object is reconciled to (status.id); empty before its first create. */
  id: string;
  message: string;
  age: string;
}

function resourceRowOf(kind: string, o: ResourceObject, now = Date.now()): ResourceRow {
  const ready = o.status?.conditions?.find((c) => c.type === 'Ready');
  const created = o.metadata.creationTimestamp ? new Date(o.metadata.creationTimestamp).getTime() : now;
  return {
    namespace: o.metadata.namespace ?? '',
    kind,
    name: o.metadata.name,
    ready: ready?.status ?? 'Unknown',
    reason: ready?.reason ?? '',
    id: o.status?.id ?? '',
    message: ready?.message ?? '',
    age: age(now - created),
  };
}

/** Every namespaced KupenStack kind's objects, in one namespace or all; a kind whose CRD is not installed lists nothing. */
export async function listResources(kc: k8s.KubeConfig, registry: SchemaRegistry, namespace?: string): Promise<ResourceRow[]> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const kinds = [...registry.kinds.values()].filter((k) => k.scope === 'Namespaced');
  const lists = await Promise.all(
    kinds.map(async (k) => {
      try {
        const list = (
          namespace
            ? await api.listNamespacedCustomObject({ group, version, namespace, plural: k.plural })
            : await api.listClusterCustomObject({ group, version, plural: k.plural })
        ) as { items: ResourceObject[] };
        return list.items.map((o) => resourceRowOf(k.kind, o));
      } catch (err) {
        if (isKubeStatus(err, 404)) return [];
        throw kubeApiError(`list ${k.plural}`, err);
      }
    }),
  );
  return lists.flat().sort((a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
}

export interface SyncTree {
  sync: SyncRow;
  /** The Sync's inventory, each object as the cluster has it now (ready `Missing` when it is gone). */
  objects: ResourceRow[];
}

/** A Sync and the objects it applied (its status.inventory), each with its Ready condition and OpenStack id. */
export async function syncTree(kc: k8s.KubeConfig, registry: SchemaRegistry, name: string): Promise<SyncTree> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  let sync: Parameters<typeof rowOf>[0] & { status?: { inventory?: InventoryEntry[] } };
  try {
    sync = (await api.getClusterCustomObject({ group, version, plural: 'syncs', name })) as typeof sync;
  } catch (err) {
    if (isKubeStatus(err, 404)) throw new SyncNotFoundError(`Sync ${name}`, err);
    throw kubeApiError(`read Sync ${name}`, err);
  }
  const objects = await Promise.all(
    (sync.status?.inventory ?? []).map(async (e): Promise<ResourceRow> => {
      const missing: ResourceRow = {
        namespace: e.namespace ?? '',
        kind: e.kind,
        name: e.name,
        ready: 'Missing',
        reason: '',
        id: '',
        message: 'not in the cluster',
        age: '',
      };
      const plural = registry.kinds.get(e.kind)?.plural;
      if (!plural) return { ...missing, message: `kind ${e.kind} is not one of KupenStack's` };
      const [g, v] = e.apiVersion.split('/') as [string, string];
      try {
        const o = (
          e.namespace
            ? await api.getNamespacedCustomObject({ group: g, version: v, namespace: e.namespace, plural, name: e.name })
            : await api.getClusterCustomObject({ group: g, version: v, plural, name: e.name })
        ) as ResourceObject;
        return resourceRowOf(e.kind, o);
      } catch (err) {
        if (isKubeStatus(err, 404)) return missing;
        throw kubeApiError(`read ${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`, err);
      }
    }),
  );
  return { sync: rowOf(sync), objects };
}
