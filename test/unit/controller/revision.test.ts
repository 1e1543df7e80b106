import { describe, expect, it } from 'vitest';
import { formatDiagnostic } from '../../../agent/diagnostic.ts';
import { documentsOf, revisionOf } from '../../../agent/controller/resources/revision.ts';
import { validateNamespace } from '../../../agent/controller/resources/validate-namespace.ts';
import type { KubeObject } from '../../../agent/controller/resources/objects.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';

const registry = loadSchemaRegistry();

function cr(kind: string, name: string, spec: Record<string, unknown>, extra: Partial<KubeObject['metadata']> = {}): { kind: string; object: KubeObject } {
  return {
    kind,
    object: {
      apiVersion: 'kupenstack.io/v1alpha1',
      kind,
      metadata: { name, namespace: 'team-a', uid: `uid-${name}`, resourceVersion: '17', generation: 2, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' }, finalizers: ['kupenstack.io/finalizer'], ...extra },
      spec,
      status: { id: 'x' },
    },
  };
}

describe('custom resources as a revision', () => {
  it('become documents named by their address, without server-set metadata or status, and validate like files', () => {
    const docs = documentsOf([cr('Network', 'app', { mtu: 1400 }), cr('Subnet', 'app', { networkRef: { name: 'app' }, cidr: '10.1.0.0/24', gatewayIP: '10.1.0.1' })]);
    expect(docs.map((d) => d.file)).toEqual(['team-a/Network/app', 'team-a/Subnet/app']);
    expect(docs[0]!.value).toEqual({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name: 'app', namespace: 'team-a' }, spec: { mtu: 1400 } });
    const { validated, rejected } = validateNamespace(docs, registry);
    expect(rejected.size).toBe(0);
    expect(validated.order).toEqual(['team-a/Network/app', 'team-a/Subnet/app']);
  });

  it('leave out objects being deleted', () => {
    const docs = documentsOf([cr('Network', 'app', {}), cr('Network', 'old', {}, { deletionTimestamp: '2026-11-23T12:00:00Z' })]);
    expect(docs.map((d) => d.file)).toEqual(['team-a/Network/app']);
  });

  it('set an invalid object aside with the message `kupenstack validate` gives, and its dependents with it; the rest stays', () => {
    const docs = documentsOf([
      cr('Network', 'app', {}),
      cr('Subnet', 'bad', { networkRef: { name: 'app' }, cidr: '10.2.0.0/24', gatewayIP: '10.9.9.1' }),
      cr('Port', 'p1', { networkRef: { name: 'app' }, fixedIPs: [{ subnetRef: { name: 'bad' } }] }),
      cr('Subnet', 'good', { networkRef: { name: 'app' }, cidr: '10.3.0.0/24' }),
    ]);
    const { validated, rejected } = validateNamespace(docs, registry);
    expect([...rejected.keys()].sort()).toEqual(['team-a/Port/p1', 'team-a/Subnet/bad']);
    const message = rejected.get('team-a/Subnet/bad')!.map(formatDiagnostic).join('; ');
    expect(message).toContain('team-a/Subnet/bad');
    expect(message).toMatch(/gateway/i);
    expect(validated.manifests.map((m) => m.address).sort()).toEqual(['team-a/Network/app', 'team-a/Subnet/good']);
    expect(validated.diagnostics).toEqual([]);
  });

  it('have a revision that moves with a spec change, a new object or a deletion, never with a status write', () => {
    const a = cr('Network', 'a', {}).object;
    const base = revisionOf('team-a', [a]);
    expect(base).toMatch(/^k8s:team-a@[0-9a-f]{12}$/);
    expect(revisionOf('team-a', [{ ...a, metadata: { ...a.metadata, resourceVersion: '99' }, status: { id: 'y' } }])).toBe(base);
    expect(revisionOf('team-a', [{ ...a, metadata: { ...a.metadata, generation: 3 } }])).not.toBe(base);
    expect(revisionOf('team-a', [a, cr('Network', 'b', {}).object])).not.toBe(base);
    expect(revisionOf('team-a', [{ ...a, metadata: { ...a.metadata, deletionTimestamp: '2026-11-23T12:00:00Z' } }])).not.toBe(base);
  });
});
