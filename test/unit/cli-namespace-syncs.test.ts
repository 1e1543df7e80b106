import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { table } from '../../agent/cli/get.ts';
import { rowOf } from '../../agent/cli/cluster/sync-client.ts';
import { describeTarget, syncTargetOf, targetArgs } from '../../agent/cli/sync-target.ts';

describe("kupenstack get|suspend|resume|reconcile with tenants' NamespaceSyncs", () => {
  it('a NamespaceSync row carries its namespace; a NAMESPACE column appears when one is listed, a cluster Sync shows (cluster)', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    const spec = { source: { git: { url: 'https://git.example/r.git', ref: { branch: 'main' } } } };
    const cluster = rowOf({ metadata: { name: 'infra', creationTimestamp: '2026-01-01T00:00:00Z' }, spec }, now);
    const tenant = rowOf({ metadata: { name: 'apps', namespace: 'team-a', creationTimestamp: '2026-01-01T00:00:00Z' }, spec }, now);
    expect(tenant.namespace).toBe('team-a');
    expect(cluster.namespace).toBeUndefined();
    const lines = table([cluster, tenant], false).split('\n');
    expect(lines[0]!.split(/ {2,}/)[0]).toBe('NAMESPACE');
    expect(lines[1]!.startsWith('(cluster)   infra')).toBe(true);
    expect(lines[2]!.startsWith('team-a      apps')).toBe(true);
    expect(table([cluster], false).startsWith('NAME ')).toBe(true);
  });

  it('`sync NAME` is the cluster Sync, `sync NAME -n NS` and `namespacesync NAME` a NamespaceSync', () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:6443' }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: 'team-c' }], currentContext: 'x' });
    expect(syncTargetOf('reconcile', 'sync', 'infra', undefined, kc)).toBe('infra');
    expect(syncTargetOf('reconcile', 'sync', 'apps', 'team-a', kc)).toEqual({ namespace: 'team-a', name: 'apps' });
    expect(syncTargetOf('reconcile', 'ksnssync', 'apps', undefined, kc)).toEqual({ namespace: 'team-c', name: 'apps' });
    expect(() => syncTargetOf('reconcile', 'network', 'x', undefined, kc)).toThrow(/unknown kind "network"/);
    expect([describeTarget('infra'), describeTarget({ namespace: 'team-a', name: 'apps' })]).toEqual(['Sync infra', 'NamespaceSync team-a/apps']);
    expect(targetArgs({ namespace: 'team-a', name: 'apps' })).toBe('sync apps -n team-a');
  });
});
