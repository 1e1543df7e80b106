import { describe, expect, it } from 'vitest';
import { table } from '../../agent/cli/get.ts';
import { age, rowOf } from '../../agent/gitops/sync-client.ts';

describe('kupenstack get syncs', () => {
  it('one row per Sync, as flux get kustomizations prints them; -o wide adds reason, objects and age', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    const row = rowOf({ metadata: { name: 'nets', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { source: { directory: { path: '/x' } }, suspend: true }, status: { lastAppliedRevision: 'main@sha1:abc', conditions: [{ type: 'Ready', status: 'False', reason: 'HealthCheckFailed', message: 'main@sha1:abc applied;\n1/2 objects Ready', lastTransitionTime: '2026-01-01T00:00:00Z' }], health: { ready: 1, reconciling: 0, stalled: 1 } } }, now);
    expect(row).toEqual({ name: 'nets', revision: 'main@sha1:abc', suspended: true, ready: 'False', reason: 'HealthCheckFailed', message: 'main@sha1:abc applied;\n1/2 objects Ready', age: '60m', objects: '1/2' });
    expect(table([row], false)).toBe('NAME   REVISION        SUSPENDED   READY   MESSAGE\nnets   main@sha1:abc   true        False   main@sha1:abc applied; 1/2 objects Ready\n');
    expect(table([row], true).split('\n')[1]).toBe('nets   main@sha1:abc   true        False   HealthCheckFailed   1/2       60m   main@sha1:abc applied; 1/2 objects Ready');
  });

  it('ages as kubectl prints them', () => {
    expect([5_000, 150_000, 3_600_000 * 5 + 600_000, 3_600_000 * 30, 86_400_000 * 12].map(age)).toEqual(['5s', '2m30s', '5h10m', '30h', '12d']);
  });
});
