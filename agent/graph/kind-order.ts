import type { SchemaRegistry } from '../schema/registry.ts';

/**
 * Kinds ordered so that a kind comes after every kind it can reference
 * (Network before Subnet before Port before VirtualMachine). Pruned objects
 * have no manifest left to build a graph from, so they are deleted in the
 * reverse of this order.
 */
export function kindOrder(registry: SchemaRegistry): string[] {
  const deps = kindDependencies(registry);
  const order: string[] = [];
  const visiting = new Set<string>();
  const visit = (k: string): void => {
    if (order.includes(k) || visiting.has(k)) return;
    visiting.add(k);
    for (const d of [...(deps.get(k) ?? [])].sort()) visit(d);
    visiting.delete(k);
    order.push(k);
  };
  for (const k of [...deps.keys()].sort()) visit(k);
  return order;
}

/** The kinds each kind references or is created after (weak, objects-only and same-kind references left out). */
export function kindDependencies(registry: SchemaRegistry): Map<string, Set<string>> {
  const deps = new Map<string, Set<string>>();
  for (const info of registry.kinds.values())
    deps.set(info.kind, new Set([...info.refs.filter((r) => !r.weak && !r.objectsOnly && r.target !== info.kind).map((r) => r.target), ...info.after]));
  return deps;
}
