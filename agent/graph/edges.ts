import { addressOf, type Manifest } from '../model/manifest.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { Reference } from './references.ts';

/**
 * The edges of a revision's dependency graph: every strong reference, and the
 * ordering a kind asks for without a reference (`x-kupenstack-after`: every
 * manifest of the listed kinds in the same namespace — a port needs the
 * subnets of its network before it can get an address).
 */
export function dependencyEdges(manifests: Manifest[], references: Reference[], registry: SchemaRegistry): { from: string; to: string }[] {
  const edges = references.filter((r) => !r.weak).map((r) => ({ from: r.from.address, to: addressOf(r.targetKind, r.targetName, r.from.metadata.namespace) }));
  const byNamespaceKind = new Map<string, Manifest[]>();
  for (const m of manifests) {
    const key = `${m.metadata.namespace ?? ''}/${m.kind}`;
    const list = byNamespaceKind.get(key);
    if (list) list.push(m);
    else byNamespaceKind.set(key, [m]);
  }
  for (const m of manifests) {
    for (const kind of registry.kinds.get(m.kind)?.after ?? []) {
      for (const other of byNamespaceKind.get(`${m.metadata.namespace ?? ''}/${kind}`) ?? []) edges.push({ from: m.address, to: other.address });
    }
  }
  return edges;
}
