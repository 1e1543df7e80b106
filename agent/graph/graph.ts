import type { Manifest } from '../model/manifest.ts';

/** Manifests as nodes; an edge a → b means a needs b (b is created first, deleted last). */
export interface DependencyGraph {
  nodes: Map<string, Manifest>;
  /** address → addresses it depends on (strong references only). */
  dependsOn: Map<string, Set<string>>;
  /** address → addresses that depend on it. */
  dependents: Map<string, Set<string>>;
}

export function buildGraph(manifests: Manifest[], edges: { from: string; to: string }[]): DependencyGraph {
  const nodes = new Map(manifests.map((m) => [m.address, m]));
  const dependsOn = new Map<string, Set<string>>();
  const dependents = new Map<string, Set<string>>();
  for (const a of nodes.keys()) {
    dependsOn.set(a, new Set());
    dependents.set(a, new Set());
  }
  for (const { from, to } of edges) {
    if (from === to || !nodes.has(from) || !nodes.has(to)) continue;
    dependsOn.get(from)?.add(to);
    dependents.get(to)?.add(from);
  }
  return { nodes, dependsOn, dependents };
}

/** Strongly connected components with more than one node: each holds at least one cycle (Tarjan). */
export function findCycles(graph: DependencyGraph): string[][] {
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];

  // Iterative, so a 10 000-node chain does not overflow the call stack.
  for (const start of [...graph.nodes.keys()].sort()) {
    if (indexes.has(start)) continue;
    const work: { node: string; edges: string[]; next: number }[] = [];
    const enter = (node: string): void => {
      indexes.set(node, index);
      low.set(node, index);
      index++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: [...(graph.dependsOn.get(node) ?? [])].sort(), next: 0 });
    };
    enter(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.next < frame.edges.length) {
        const to = frame.edges[frame.next++]!;
        if (!indexes.has(to)) enter(to);
        else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, indexes.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === indexes.get(frame.node)) {
        const component: string[] = [];
        let member: string | undefined;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) cycles.push(cyclePath(graph, component));
      }
    }
  }
  return cycles.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** One concrete cycle inside a component, starting at its smallest address: [a, b, c, a]. */
function cyclePath(graph: DependencyGraph, component: string[]): string[] {
  const members = new Set(component);
  const start = [...component].sort()[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of [...(graph.dependsOn.get(node) ?? [])].sort()) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [...component.sort(), start];
}

/**
 * Dependencies first (the order to create in); ties broken by address so the
 * order never depends on file order. Assumes no cycles.
 */
export function createOrder(graph: DependencyGraph): string[] {
  const remaining = new Map<string, number>();
  for (const [a, deps] of graph.dependsOn) remaining.set(a, deps.size);
  const ready = [...remaining]
    .filter(([, n]) => n === 0)
    .map(([a]) => a)
    .sort();
  const order: string[] = [];
  while (ready.length > 0) {
    const next = ready.shift()!;
    order.push(next);
    const unlocked: string[] = [];
    for (const d of graph.dependents.get(next) ?? []) {
      const n = remaining.get(d)! - 1;
      remaining.set(d, n);
      if (n === 0) unlocked.push(d);
    }
    if (unlocked.length) insertSorted(ready, unlocked);
  }
  return order;
}

/** Dependents first: the order to delete in. */
export function deleteOrder(graph: DependencyGraph): string[] {
  return createOrder(graph).reverse();
}

function insertSorted(sorted: string[], items: string[]): void {
  for (const item of items) {
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (sorted[mid]! < item) lo = mid + 1;
      else hi = mid;
    }
    sorted.splice(lo, 0, item);
  }
}
