import { describe, expect, it } from 'vitest';
import { buildGraph, createOrder, deleteOrder, findCycles } from '../../agent/graph/graph.ts';
import { dependencyEdges } from '../../agent/graph/edges.ts';
import { kindOrder } from '../../agent/graph/kind-order.ts';
import { referencesOf } from '../../agent/graph/references.ts';
import { addressOf, type Manifest } from '../../agent/model/manifest.ts';
import { sharedSchemaRegistry } from '../../agent/schema/registry.ts';
import { subsetOf, withDependents } from '../../agent/validate/subset.ts';
import type { ValidatedRevision } from '../../agent/validate/validate.ts';

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

describe('ordering without a reference (x-kupenstack-after)', () => {
  const registry = sharedSchemaRegistry();
  const manifest = (kind: string, name: string, spec: Record<string, unknown>): Manifest =>
    ({ apiVersion: 'kupenstack.io/v1alpha1', kind, metadata: { name, namespace: 't' }, spec, address: addressOf(kind, name, 't') }) as Manifest;
  const edgesOf = (ms: Manifest[]): string[] =>
    dependencyEdges(
      ms,
      ms.flatMap((m) => referencesOf(m, registry)),
      registry,
    )
      .map((e) => `${e.from} -> ${e.to}`)
      .sort();

  it('makes a port wait for the subnets of its own network only', () => {
    const ms = [
      manifest('Network', 'a', {}),
      manifest('Network', 'b', {}),
      manifest('Subnet', 'a1', { networkRef: { name: 'a' }, cidr: '10.0.0.0/24' }),
      manifest('Subnet', 'a2', { networkRef: { name: 'a' }, cidr: '10.0.1.0/24' }),
      manifest('Subnet', 'b1', { networkRef: { name: 'b' }, cidr: '10.1.0.0/24' }),
      manifest('Port', 'pa', { networkRef: { name: 'a' } }),
      manifest('VirtualMachine', 'vm', { flavorName: 'm1', networks: [{ networkRef: { name: 'b' } }] }),
    ];
    const edges = edgesOf(ms);
    expect(edges.filter((e) => e.startsWith('t/Port/pa'))).toEqual(['t/Port/pa -> t/Network/a', 't/Port/pa -> t/Subnet/a1', 't/Port/pa -> t/Subnet/a2']);
    expect(edges.filter((e) => e.startsWith('t/VirtualMachine/vm') && e.includes('Subnet'))).toEqual(['t/VirtualMachine/vm -> t/Subnet/b1']);
  });

  it('keeps the edge when a side names no Network manifest (a subnet imported by id)', () => {
    const ms = [
      manifest('Network', 'a', {}),
      manifest('Subnet', 'a1', { networkRef: { name: 'a' }, cidr: '10.0.0.0/24' }),
      manifest('Subnet', 'ext', { import: { id: '5f1c0b1e-0d3c-4c53-9a52-6b8f0e1d2c3a' } }),
      manifest('Port', 'pa', { networkRef: { name: 'a' } }),
    ];
    expect(edgesOf(ms).filter((e) => e.startsWith('t/Port/pa') && e.includes('Subnet'))).toEqual(['t/Port/pa -> t/Subnet/a1', 't/Port/pa -> t/Subnet/ext']);
  });

  it('orders a volume after the snapshot it is made from, yet prunes snapshots before any volume (objects-only reference)', () => {
    const ms = [manifest('Volume', 'data', { size: 1 }), manifest('VolumeSnapshot', 'snap', { volumeRef: { name: 'data' } }), manifest('Volume', 'copy', { size: 1, source: { snapshotRef: { name: 'snap' } } })];
    const g = buildGraph(ms, dependencyEdges(ms, ms.flatMap((m) => referencesOf(m, registry)), registry));
    expect(createOrder(g)).toEqual(['t/Volume/data', 't/VolumeSnapshot/snap', 't/Volume/copy']);
    // Cinder refuses to delete a volume that has snapshots: prune goes in the reverse of the kind order.
    const kinds = kindOrder(registry);
    expect(kinds.indexOf('Volume')).toBeLessThan(kinds.indexOf('VolumeSnapshot'));
    expect(kinds.indexOf('ServerGroup')).toBeLessThan(kinds.indexOf('VirtualMachine'));
  });
});

describe("a targeted run's objects", () => {
  const revision = (nodes: string[], edges: { from: string; to: string }[]): ValidatedRevision => {
    const manifests = nodes.map(node);
    return { manifests, graph: buildGraph(manifests, edges), order: nodes } as unknown as ValidatedRevision;
  };
  const net = { from: 't/Subnet/s', to: 't/Network/n' };
  const port = { from: 't/Port/p', to: 't/Subnet/s' };
  const vm = { from: 't/VirtualMachine/vm', to: 't/Port/p' };

  it('are the changed ones and, transitively, what depends on them (a replace cascades to those); subsetOf then adds what they need', () => {
    const r = revision(['t/Network/n', 't/Subnet/s', 't/Port/p', 't/VirtualMachine/vm', 't/Network/other'], [net, port, vm]);
    expect(withDependents(r, ['t/Subnet/s'])).toEqual(['t/Port/p', 't/Subnet/s', 't/VirtualMachine/vm']);
    expect(withDependents(r, ['t/Network/other'])).toEqual(['t/Network/other']);
    expect(subsetOf(r, withDependents(r, ['t/Subnet/s'])).manifests.map((m) => m.address).sort()).toEqual(['t/Network/n', 't/Port/p', 't/Subnet/s', 't/VirtualMachine/vm']);
  });

  it('follow a chain of 20 000 dependents without recursion limits', () => {
    const nodes = Array.from({ length: 20_000 }, (_, i) => `n${String(i).padStart(5, '0')}`);
    const r = revision(nodes, nodes.slice(1).map((n, i) => ({ from: n, to: nodes[i]! })));
    expect(withDependents(r, ['n00000'])).toHaveLength(20_000);
  });
});
