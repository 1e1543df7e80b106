import type { ValidatedRevision } from './validate.ts';

/**
 * The named manifests of a validated revision and, transitively, what they
 * depend on (its ids fill their references): what a partial pass plans.
 * Addresses the revision does not declare are left out.
 */
export function subsetOf(validatedHead: ValidatedRevision, addresses: readonly string[]): ValidatedRevision {
  const keep = new Set<string>();
  const declared = new Set(validatedHead.manifests.map((m) => m.address));
  const add = (address: string): void => {
    if (keep.has(address) || !declared.has(address)) return;
    keep.add(address);
    for (const d of validatedHead.graph.dependsOn.get(address) ?? []) add(d);
  };
  for (const a of addresses) add(a);
  return { ...validatedHead, manifests: validatedHead.manifests.filter((m) => keep.has(m.address)), order: validatedHead.order.filter((a) => keep.has(a)) };
}

/**
 * The named manifests and, transitively, what depends on them: a changed
 * object's replace cascades to its dependents only if they are planned with
 * it (plan/decide.ts `cascade`), so a targeted run plans them too.
 */
export function withDependents(validatedHead: ValidatedRevision, addresses: readonly string[]): string[] {
  const keep = new Set<string>();
  // A stack, not recursion: a chain of dependents can be as long as the revision.
  const todo = [...addresses];
  for (let address = todo.pop(); address !== undefined; address = todo.pop()) {
    if (keep.has(address)) continue;
    keep.add(address);
    todo.push(...(validatedHead.graph.dependents.get(address) ?? []));
  }
  return [...keep].sort();
}
