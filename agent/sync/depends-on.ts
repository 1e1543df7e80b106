/**
 * dependsOn between Syncs (Flux's Kustomization dependsOn): the one check
 * both modes make on the graph. A cycle would keep every Sync in it waiting
 * forever, so it is refused before anything runs.
 */

/** The first cycle through the dependsOn edges (reachable from `from`, or anywhere), as names `a → b → a`, or undefined. */
export function findCycle(edges: ReadonlyMap<string, readonly string[]>, from?: string): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (name: string): string[] | undefined => {
    if (onPath.has(name)) return [...path.slice(path.indexOf(name)), name];
    if (done.has(name)) return undefined;
    path.push(name);
    onPath.add(name);
    for (const next of edges.get(name) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    onPath.delete(name);
    done.add(name);
    return undefined;
  };
  for (const name of from !== undefined ? [from] : [...edges.keys()].sort()) {
    const cycle = visit(name);
    if (cycle) return cycle;
  }
  return undefined;
}

/** The Ready reason of a Sync whose newest revision is held for a reference of a Sync depending on it (conditions.ts's reasons). */
export const referencedByDependent = 'ReferencedByDependent';

/** A dependency's status as both modes keep it: Ready, and which revision it fetched and applied. */
export interface DependencyState {
  ready?: { status: string; reason?: string; message?: string };
  lastFetchedRevision?: string;
  lastAppliedRevision?: string;
  suspended?: boolean;
}

/**
 * Why a Sync must still wait for `name`, or undefined when it may run: the
 * dependency is Ready at the revision it fetched last (Flux: Ready at its
 * source's current revision).
 */
export function dependencyWait(name: string, state: DependencyState | undefined): string | undefined {
  if (!state) return `dependency ${name} does not exist`;
  // Its newest revision is held for a reference of a Sync depending on it, its last good one applied: that Sync runs (to drop the reference).
  if (state.ready?.reason === referencedByDependent) return undefined;
  if (state.ready?.status !== 'True')
    return `dependency ${name} is not Ready${state.ready?.reason ? ` (${state.ready.reason}${state.ready.message ? `: ${state.ready.message}` : ''})` : ''}`;
  if (state.lastFetchedRevision && state.lastAppliedRevision !== state.lastFetchedRevision)
    return `dependency ${name} is not Ready at its newest revision ${state.lastFetchedRevision} yet`;
  return undefined;
}
