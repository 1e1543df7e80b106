import type { ChartInfo } from './catalogue.ts';

/**
 * Install groups of the enabled charts, in order: the strongly connected components of
 * the charts' needs (nova and neutron need each other: one group, one gate), layered so
 * that a group comes after every group it needs. Charts in one group (and groups of one
 * layer) are independent of each other's order; the result is sorted by catalogue order.
 * For the test cloud: [mariadb, rabbitmq, memcached] → [keystone] →
 * [glance, placement, cinder, horizon] → [nova, neutron].
 */
export function installGroups(charts: readonly ChartInfo[]): string[][] {
  const names = charts.map((c) => c.chart);
  const on = new Set(names);
  const needs = new Map(charts.map((c) => [c.chart, c.needs.filter((n) => on.has(n))]));
  const sccs = tarjan(names, (n) => needs.get(n) ?? []);
  const sccOf = new Map<string, number>();
  sccs.forEach((scc, i) => scc.forEach((n) => sccOf.set(n, i)));
  // Layer = 1 + the deepest layer among the components it needs (memoised DFS over the DAG of SCCs).
  const layer = new Map<number, number>();
  const layerOf = (i: number): number => {
    const known = layer.get(i);
    if (known !== undefined) return known;
    const deps = new Set(
      sccs[i]!.flatMap((n) => needs.get(n)!)
        .map((d) => sccOf.get(d)!)
        .filter((j) => j !== i),
    );
    const l = deps.size === 0 ? 0 : 1 + Math.max(...[...deps].map(layerOf));
    layer.set(i, l);
    return l;
  };
  const byLayer = new Map<number, string[]>();
  sccs.forEach((scc, i) => {
    const l = layerOf(i);
    byLayer.set(l, [...(byLayer.get(l) ?? []), ...scc]);
  });
  const order = (a: string, b: string): number => names.indexOf(a) - names.indexOf(b);
  return [...byLayer.keys()].sort((a, b) => a - b).map((l) => byLayer.get(l)!.sort(order));
}

function tarjan(nodes: string[], edges: (n: string) => string[]): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges(v)) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      out.push(scc);
    }
  };
  for (const n of nodes) if (!idx.has(n)) visit(n);
  return out;
}
