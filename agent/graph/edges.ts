import { addressOf, type Manifest } from '../model/manifest.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { Reference } from './references.ts';

/**
 * The edges of a revision's dependency graph: every strong reference, and the
 * ordering a kind asks for without a reference (`x-kupenstack-after`: every
 * manifest of the listed kinds in the same namespace — a port needs the
 * subnets of its network before it can get an address). `x-kupenstack-after-via`
 * narrows it to the manifests that share a reference to an object of that kind:
 * a port waits for the subnets of its own network, so the ports of the first
 * networks go while the subnets of the last ones are still being made. When
 * either side names no such object (a network given by id), the edge stays.
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
  // Per manifest, per kind: the names of the objects of that kind it references (strongly).
  const targets = new Map<string, Map<string, Set<string>>>();
  for (const r of references) {
    if (r.weak) continue;
    const byKind = targets.get(r.from.address) ?? new Map<string, Set<string>>();
    targets.set(r.from.address, byKind);
    const names = byKind.get(r.targetKind) ?? new Set<string>();
    byKind.set(r.targetKind, names);
    names.add(r.targetName);
  }
  const shares = (a: string, b: string, via: string): boolean => {
    const x = targets.get(a)?.get(via);
    const y = targets.get(b)?.get(via);
    if (!x?.size || !y?.size) return true;
    for (const n of x) if (y.has(n)) return true;
    return false;
  };
  for (const m of manifests) {
    const info = registry.kinds.get(m.kind);
    for (const kind of info?.after ?? []) {
      for (const other of byNamespaceKind.get(`${m.metadata.namespace ?? ''}/${kind}`) ?? []) {
        if (info!.afterVia && !shares(m.address, other.address, info!.afterVia)) continue;
        edges.push({ from: m.address, to: other.address });
      }
    }
  }
  return edges;
}
