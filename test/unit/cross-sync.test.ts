import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clusterCrossSync, type SyncView } from '../../agent/controller/syncs/cross-sync.ts';
import { sharedSchemaRegistry } from '../../agent/schema/registry.ts';
import { heldReferences } from '../../agent/sync/cross-sync.ts';
import { dependencyWait } from '../../agent/sync/depends-on.ts';
import { checkPath } from '../../agent/validate/check-path.ts';

/* References across Syncs (issue 48, part 3): what a dependency declares may be referenced; what a dependent references may not be dropped. */
const registry = sharedSchemaRegistry();
const subnet = "apiVersion: kupenstack.io/v1alpha1\nkind: Subnet\nmetadata:\n  name: web\n  namespace: team\nspec:\n  networkRef: {name: base}\n  cidr: 10.9.0.0/24\n";
const network = (name: string): { apiVersion: string; kind: string; namespace: string; name: string } => ({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: 'team', name });

async function check(provided?: Parameters<typeof checkPath>[3]): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ks-cross-sync-'));
  writeFileSync(join(dir, 'subnet.yaml'), subnet);
  return (await checkPath(dir, registry, undefined, provided)).diagnostics.map((d) => `${d.file.slice(dir.length + 1)}:${d.line} ${d.message}`);
}

describe('references across Syncs', () => {
  it("a reference to an object a Sync depended on declares is valid; one no dependency declares is refused at its file and line, naming the Syncs that don't declare it", async () => {
    expect(await check()).toEqual(['subnet.yaml:7 no Network named "base" in namespace "team"; declare it or fix the name']);
    expect(await check({ objects: new Map([['team/Network/base', 'infra']]), syncs: ['infra'] })).toEqual([]);
    // The same name in another namespace, or of another kind, is not it.
    expect(await check({ objects: new Map([['other/Network/base', 'infra'], ['team/Router/base', 'infra']]), syncs: ['infra'] })).toEqual([
      'subnet.yaml:7 no Network named "base" in namespace "team", and Sync "infra" this one depends on does not declare one; declare it or fix the name',
    ]);
    expect(await check({ objects: new Map(), syncs: ['infra', 'shared'] })).toEqual([
      'subnet.yaml:7 no Network named "base" in namespace "team", and none of the Syncs this one depends on ("infra", "shared") declares one; declare it or fix the name',
    ]);
  });

  it('an object a dependent Sync still references may not be dropped: one line per reference, naming the Sync, object and field', () => {
    const applied = { kind: 'Subnet', metadata: { name: 'web', namespace: 'team' }, spec: { networkRef: { name: 'base' }, cidr: '10.9.0.0/24' } };
    expect(heldReferences(new Set(['team/Network/base']), [{ sync: 'apps', objects: [applied] }], registry)).toEqual([
      'Network "base" in namespace "team" is still referenced by Sync "apps" (Subnet team/web spec.networkRef): this revision drops it; remove that reference first',
    ]);
    expect(heldReferences(new Set(['team/Network/other']), [{ sync: 'apps', objects: [applied] }], registry)).toEqual([]);
  });

  it("in the cluster: a dependency's inventory is what it provides; a dependent's applied objects are read only when something is dropped", async () => {
    const views: SyncView[] = [
      { name: 'infra', dependsOn: [], inventory: [network('base'), network('spare'), { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team', name: 'x' }] },
      { name: 'apps', dependsOn: ['infra'], inventory: [{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Subnet', namespace: 'team', name: 'web' }] },
    ];
    const reads: string[] = [];
    const custom = {
      getNamespacedCustomObject: (r: { plural: string; namespace: string; name: string }) => {
        reads.push(`${r.plural}/${r.namespace}/${r.name}`);
        return Promise.resolve({ kind: 'Subnet', metadata: { name: r.name, namespace: r.namespace }, spec: { networkRef: { name: 'base' } } });
      },
    } as unknown as k8s.CustomObjectsApi;
    const apps = clusterCrossSync('apps', () => views, custom, registry);
    expect(await apps.provided()).toEqual({ objects: new Map([['team/Network/base', 'infra'], ['team/Network/spare', 'infra']]), syncs: ['infra'] });
    const infra = clusterCrossSync('infra', () => views, custom, registry);
    expect(await infra.provided()).toBeUndefined();
    expect(await infra.stillReferenced(new Set(['team/Network/base', 'team/Network/spare']))).toEqual([]);
    expect(reads).toEqual([]);
    expect(await infra.stillReferenced(new Set(['team/Network/base']))).toEqual([]);
    expect(await infra.stillReferenced(new Set(['team/Network/spare']))).toEqual([
      'Network "base" in namespace "team" is still referenced by Sync "apps" (Subnet team/web spec.networkRef): this revision drops it; remove that reference first',
    ]);
    expect(reads).toEqual(['subnets/team/web', 'subnets/team/web']);
  });

  it('a dependency whose newest revision is held for a dependent\'s reference does not keep that dependent waiting (its last good revision is applied)', () => {
    const held = { ready: { status: 'False', reason: 'ReferencedByDependent', message: 'revision b rejected' }, lastFetchedRevision: 'b', lastAppliedRevision: 'a' };
    expect(dependencyWait('infra', held)).toBeUndefined();
    expect(dependencyWait('infra', { ...held, ready: { status: 'False', reason: 'ValidationFailed' } })).toBe('dependency infra is not Ready (ValidationFailed)');
  });
});
