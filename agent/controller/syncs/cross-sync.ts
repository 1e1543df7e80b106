import type * as k8s from '@kubernetes/client-node';
import { addressOf } from '../../model/manifest.ts';
import { group, version, type SchemaRegistry } from '../../schema/registry.ts';
import { heldReferences, type AppliedObject, type CrossSyncLinks } from '../../sync/cross-sync.ts';
import type { InventoryEntry } from './inventory.ts';

/** What the Sync loop's watch cache shows of one Sync: its dependsOn and what it applied. */
export interface SyncView {
  name: string;
  dependsOn: readonly string[];
  inventory: readonly InventoryEntry[];
}

const ours = (e: InventoryEntry): boolean => e.apiVersion === `${group}/${version}`;
const addressOfEntry = (e: InventoryEntry): string => addressOf(e.kind, e.name, e.namespace);

/**
 * References across Syncs in the cluster: a dependency's objects are those in its
 * status.inventory (what it applied); a dependent's references are read from the custom
 * resources it applied (the controller's identity reads them), only when this Sync's new
 * revision drops something.
 */
export function clusterCrossSync(name: string, syncs: () => SyncView[], custom: k8s.CustomObjectsApi, registry: SchemaRegistry): CrossSyncLinks {
  return {
    provided: () => {
      const all = syncs();
      const deps = all.find((s) => s.name === name)?.dependsOn ?? [];
      if (deps.length === 0) return Promise.resolve(undefined);
      const objects = new Map<string, string>();
      for (const d of deps) for (const e of all.find((s) => s.name === d)?.inventory ?? []) if (ours(e)) objects.set(addressOfEntry(e), d);
      return Promise.resolve({ objects, syncs: deps });
    },
    stillReferenced: async (kept) => {
      const all = syncs();
      const dropped = new Set(
        (all.find((s) => s.name === name)?.inventory ?? [])
          .filter(ours)
          .map(addressOfEntry)
          .filter((a) => !kept.has(a)),
      );
      const dependents = all.filter((s) => s.dependsOn.includes(name));
      if (dropped.size === 0 || dependents.length === 0) return [];
      const read = async (s: SyncView): Promise<{ sync: string; objects: AppliedObject[] }> => {
        const objects: AppliedObject[] = [];
        for (const e of s.inventory) {
          const info = registry.kinds.get(e.kind);
          if (!ours(e) || !e.namespace || !info?.refs.length) continue;
          try {
            objects.push(
              (await custom.getNamespacedCustomObject({ group, version, plural: info.plural, namespace: e.namespace, name: e.name })) as AppliedObject,
            );
          } catch (err) {
            // Gone already: it references nothing.
            if ((err as { code?: number }).code !== 404) throw err;
          }
        }
        return { sync: s.name, objects };
      };
      return heldReferences(dropped, await Promise.all(dependents.map(read)), registry);
    },
  };
}
