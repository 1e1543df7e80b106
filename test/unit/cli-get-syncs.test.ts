import { describe, expect, it } from 'vitest';
import { table } from '../../agent/cli/get.ts';
import { age, rowOf } from '../../agent/cli/cluster/sync-client.ts';

describe('kupenstack get syncs', () => {
  it('one row per Sync with the columns kubectl get syncs prints (the CRD printer columns); -o wide adds the reason', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    const row = rowOf({ metadata: { name: 'nets', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { source: { directory: { path: '/x' } }, suspend: true }, status: { lastAppliedRevision: 'main@sha1:abc', conditions: [{ type: 'Ready', status: 'False', reason: 'HealthCheckFailed', message: 'main@sha1:abc applied;\n1/2 objects Ready', lastTransitionTime: '2026-01-01T00:00:00Z' }], health: { ready: 1, reconciling: 0, stalled: 1 } } }, now);
    expect(row).toEqual({ name: 'nets', revision: 'main@sha1:abc', suspended: true, ready: 'False', reason: 'HealthCheckFailed', message: 'main@sha1:abc applied;\n1/2 objects Ready', age: '60m', objects: '1/2', readyObjects: 1, stalled: 1 });
    expect(table([row], false)).toBe(
      'NAME   REVISION        SUSPENDED   READY   OBJECTS READY   STALLED   MESSAGE                                    AGE\nnets   main@sha1:abc   true        False   1               1         main@sha1:abc applied; 1/2 objects Ready   60m\n',
    );
    expect(table([row], true).split('\n')[1]).toBe('nets   main@sha1:abc   true        False   HealthCheckFailed   1               1         main@sha1:abc applied; 1/2 objects Ready   60m');
    const none = rowOf({ metadata: { name: 'new' }, spec: { source: { directory: { path: '/x' } } } }, now);
    expect(table([none], false).split('\n')[1]).toBe('new    <none>     false       Unknown   <none>          <none>    <none>    0s');
  });

  it('ages as kubectl prints them', () => {
    expect([5_000, 150_000, 3_600_000 * 5 + 600_000, 3_600_000 * 30, 86_400_000 * 12].map(age)).toEqual(['5s', '2m30s', '5h10m', '30h', '12d']);
  });
});

describe('the CRD printer columns and the CLI columns', () => {
  it('kupenstack get syncs prints the columns kubectl get syncs prints, in the same order', async () => {
    const { loadSchemaRegistry } = await import('../../agent/schema/registry.ts');
    const syncCrdColumns = loadSchemaRegistry().kinds.get('Sync')!.printerColumns.map((c) => c.name.toUpperCase());
    const head = table([], false).trim().split(/ {3,}/);
    expect(head).toEqual(['NAME', ...syncCrdColumns, 'AGE']);
  });
});
