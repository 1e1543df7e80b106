/** One object a Sync applied (status.inventory): enough to find it again and delete it. */
export interface InventoryEntry {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export function inventoryKey(e: InventoryEntry): string {
  return `${e.apiVersion}|${e.kind}|${e.namespace ?? ''}|${e.name}`;
}

export function describeEntry(e: InventoryEntry): string {
  return `${e.kind}/${e.namespace ? `${e.namespace}/` : ''}${e.name}`;
}

/** The label on every object a Sync applied: `kubectl get … -l kupenstack.io/sync=<name>`; prune deletes only objects that still carry it. */
export const syncLabel = 'kupenstack.io/sync';

/** Field manager of a Sync's applies: its own, so two Syncs never take each other's fields silently. */
export function fieldManagerOf(sync: string): string {
  return `kupenstack-sync-${sync}`;
}
