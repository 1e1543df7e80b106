import { describe, expect, it } from 'vitest';
import { buildGraph, createOrder, deleteOrder, findCycles } from '../../agent/graph/graph.ts';
import type { Manifest } from '../../agent/model/manifest.ts';

const node = (address: string): Manifest => ({ address }) as Manifest;

describe('the dependency graph', () => {
  it('orders dependencies first for create and last for delete, ties by address', () => {
    const nodes = ['t/Subnet/a', 't/Network/n', 't/VirtualMachine/vm', 't/Flavor/f', 't/Router/r'].map(node);
    const g = buildGraph(nodes, [
      { from: 't/Subnet/a', to: 't/Network/n' },
      { from: 't/VirtualMachine/vm', to: 't/Network/n' },
      { from: 't/VirtualMachine/vm', to: 't/Flavor/f' },
      { from: 't/Router/r', to: 't/Subnet/a' },
    ]);
    expect(createOrder(g)).toEqual(['t/Flavor/f', 't/Network/n', 't/Subnet/a', 't/Router/r', 't/VirtualMachine/vm']);
    expect(deleteOrder(g)).toEqual(['t/VirtualMachine/vm', 't/Router/r', 't/Subnet/a', 't/Network/n', 't/Flavor/f']);
  });

  it('names each cycle from its smallest address, and ignores self-references', () => {
    const g = buildGraph(['a', 'b', 'c', 'd', 'x'].map(node), [
      { from: 'b', to: 'c' },
      { from: 'c', to: 'a' },
      { from: 'a', to: 'b' },
      { from: 'd', to: 'a' },
      { from: 'x', to: 'x' },
    ]);
    expect(findCycles(g)).toEqual([['a', 'b', 'c', 'a']]);
  });

  it('handles a chain of 20 000 nodes without recursion limits', () => {
    const nodes = Array.from({ length: 20_000 }, (_, i) => node(`n${String(i).padStart(5, '0')}`));
    const edges = nodes.slice(1).map((n, i) => ({ from: n.address, to: nodes[i]!.address }));
    const g = buildGraph(nodes, edges);
    expect(findCycles(g)).toEqual([]);
    expect(createOrder(g)[0]).toBe('n00000');
    expect(createOrder(g).at(-1)).toBe('n19999');
  });
});
