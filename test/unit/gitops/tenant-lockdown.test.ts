import { describe, expect, it } from 'vitest';
import type { DesiredObject } from '../../../agent/controller/syncs/cluster-apply.ts';
import { namespacedSecrets, outsideNamespace, overObjectLimit, tenantServiceAccount, tenantSpecProblem } from '../../../agent/controller/syncs/tenant-lockdown.ts';
import { syncKey, syncRefOf } from '../../../agent/controller/syncs/sync-kind.ts';
import { syncConfigOf } from '../../../agent/sync/settings.ts';
import type { SyncSpec } from '../../../agent/model/kinds.generated.ts';
import type { SecretKey } from '../../../agent/secrets/resolver.ts';
import { namespaceSyncCrd } from '../../../agent/schema/namespace-sync.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';

const spec = (extra: Partial<SyncSpec> = {}): SyncSpec => ({ source: { git: { url: 'https://git.example/r.git', ref: { branch: 'main' } } }, interval: '30s', ...extra });
const config = (s: SyncSpec) =>
  syncConfigOf('apps', s, { owner: 'o', projectPrefix: '', single: false }, (k, m) => new Error(`${k.join('.')}: ${m}`));

/** A desired object as cluster-apply.ts makes it; its manifest's positions: metadata.namespace on line 5, kind on line 2. */
function object(kind: string, name: string, namespace?: string): DesiredObject {
  const position = (path: readonly (string | number)[]) => (path.join('.') === 'metadata.namespace' ? { line: 5, column: 14 } : { line: 2, column: 7 });
  return {
    entry: { apiVersion: 'kupenstack.io/v1alpha1', kind, name, ...(namespace ? { namespace } : {}) },
    plural: `${kind.toLowerCase()}s`,
    body: {},
    manifest: { apiVersion: 'kupenstack.io/v1alpha1', kind, metadata: { name, ...(namespace ? { namespace } : {}) }, spec: {}, address: `${namespace ?? ''}/${kind}/${name}`, source: { file: 'x', index: 0, value: {}, position } },
    file: `apps/${name}.yaml`,
  };
}

describe("a tenant's NamespaceSync under the admin's lockdown", () => {
  it('applies only into its namespace: an object of another namespace, or a cluster-scoped kind, is refused at its file and line', () => {
    expect(outsideNamespace([object('Network', 'a', 'team-a')], 'team-a')).toEqual([]);
    expect(outsideNamespace([object('Network', 'a', 'team-a'), object('Network', 'b', 'team-b'), object('Flavor', 'f')], 'team-a')).toEqual([
      "apps/b.yaml:5:14: error [sync.namespace] Network/b at metadata.namespace: namespace team-b is not this NamespaceSync's namespace team-a: a NamespaceSync applies only into its own namespace",
      "apps/f.yaml:2:7: error [sync.namespace] Flavor/f at kind: Flavor is cluster-scoped: a NamespaceSync applies only into its namespace team-a; ask the cluster admin's Sync for it",
    ]);
  });

  it("runs as a ServiceAccount of its namespace: its own, else the admin's default; none of either, or another namespace's, is refused", () => {
    expect(tenantServiceAccount(spec({ serviceAccountName: 'gitops' }), 'team-a', { defaultServiceAccount: 'restricted' })).toEqual({ namespace: 'team-a', name: 'gitops' });
    expect(tenantServiceAccount(spec(), 'team-a', { defaultServiceAccount: 'restricted' })).toEqual({ namespace: 'team-a', name: 'restricted' });
    expect(tenantSpecProblem(spec(), config(spec()), {})?.[0]).toEqual(['serviceAccountName']);
    expect(tenantSpecProblem(spec(), config(spec()), { defaultServiceAccount: 'restricted' })).toBeUndefined();
    const other = spec({ serviceAccountName: 'gitops', serviceAccountNamespace: 'team-b' });
    expect(tenantSpecProblem(other, config(other), {})).toEqual([['serviceAccountNamespace'], 'a NamespaceSync runs as a ServiceAccount of its own namespace: remove serviceAccountNamespace']);
  });

  it('the interval floor and the objects limit per namespace', () => {
    const fast = spec({ serviceAccountName: 'gitops', interval: '10s' });
    expect(tenantSpecProblem(fast, config(fast), { minIntervalMs: 60_000 })).toEqual([['interval'], "below the cluster's floor for NamespaceSyncs, 60s (--tenant-min-interval): set interval: 60s or more"]);
    const retry = spec({ serviceAccountName: 'gitops', interval: '5m', retryInterval: '5s' });
    expect(tenantSpecProblem(retry, config(retry), { minIntervalMs: 60_000 })?.[0]).toEqual(['retryInterval']);
    expect(overObjectLimit(3, 2, 'team-a', { maxObjectsPerNamespace: 5 })).toBeUndefined();
    expect(overObjectLimit(4, 2, 'team-a', { maxObjectsPerNamespace: 5 })).toBe(
      "4 objects in this revision and 2 of the other NamespaceSyncs of team-a exceed the cluster's limit of 5 per namespace (--tenant-max-objects)",
    );
    expect(overObjectLimit(400, 0, 'team-a', {})).toBeUndefined();
  });

  it('reads Secrets of its own namespace only, whatever a reference says', async () => {
    const asked: SecretKey[] = [];
    const remember = (ref: SecretKey): void => void asked.push(ref);
    const secrets = namespacedSecrets(
      {
        get: (ref) => (remember(ref), Promise.resolve('v')),
        getAll: (ref) => (remember(ref), Promise.resolve({})),
      },
      'team-a',
    );
    await secrets.get({ name: 'git', key: 'password' });
    await secrets.get({ name: 'git', namespace: 'kupenstack-system', key: 'password' });
    await secrets.getAll?.({ name: 'keys' });
    expect(asked.map((r) => `${r.namespace}/${r.name}`)).toEqual(['team-a/git', 'team-a/git', 'team-a/keys']);
  });

  it('keys: `name` for a Sync, `namespace/name` for a NamespaceSync', () => {
    expect(syncKey({ name: 'infra' })).toBe('infra');
    expect(syncKey({ namespace: 'team-a', name: 'apps' })).toBe('team-a/apps');
    expect(syncRefOf('team-a/apps')).toEqual({ namespace: 'team-a', name: 'apps' });
    expect(syncRefOf('infra')).toEqual({ name: 'infra' });
  });

  it("the NamespaceSync CRD is the Sync's spec namespaced, and refuses serviceAccountNamespace at admission", () => {
    const crd = namespaceSyncCrd(loadSchemaRegistry());
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toMatchObject({ kind: 'NamespaceSync', plural: 'namespacesyncs', shortNames: ['ksnssync'] });
    const specSchema = (crd.spec.versions[0]!.schema.openAPIV3Schema.properties as Record<string, Record<string, unknown>>).spec!;
    expect(specSchema['x-kubernetes-validations']).toContainEqual(expect.objectContaining({ rule: '!has(self.serviceAccountNamespace)' }));
  });
});

describe("the roles for tenants' NamespaceSyncs", () => {
  it('namespacesync-edit writes them (not their status) and is aggregated into edit and admin, -view reads them; the controller reads them and writes their status only', async () => {
    const { readFileSync } = await import('node:fs');
    const { parseAllDocuments } = await import('yaml');
    type Doc = { kind: string; metadata: { name: string; labels?: Record<string, string> }; rules?: { resources: string[]; verbs: string[] }[] };
    const docs = parseAllDocuments(readFileSync('deploy/rbac/namespace-syncs.yaml', 'utf8')).map((d) => d.toJS() as Doc);
    const role = (name: string): Doc => docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === name)!;
    const verbs = (name: string, resource: string): string[] => (role(name).rules ?? []).filter((r) => r.resources.includes(resource)).flatMap((r) => r.verbs).sort();
    expect(verbs('kupenstack-namespacesync-edit', 'namespacesyncs')).toEqual(['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
    expect(verbs('kupenstack-namespacesync-edit', 'namespacesyncs/status')).toEqual([]);
    expect(role('kupenstack-namespacesync-edit').metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-edit': 'true', 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' });
    expect(verbs('kupenstack-namespacesync-view', 'namespacesyncs')).toEqual(['get', 'list', 'watch']);
    expect(role('kupenstack-namespacesync-view').metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-view': 'true' });
    expect(verbs('kupenstack-controller-namespacesyncs', 'namespacesyncs')).toEqual(['get', 'list', 'patch', 'watch']);
    expect(verbs('kupenstack-controller-namespacesyncs', 'namespacesyncs/status')).toEqual(['get', 'patch']);
    const binding = docs.find((d) => d.kind === 'ClusterRoleBinding') as unknown as { roleRef: { name: string }; subjects: { name: string; namespace: string }[] };
    expect(binding.roleRef.name).toBe('kupenstack-controller-namespacesyncs');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'kupenstack-controller', namespace: 'kupenstack-system' }]);
    // The chart renders the same roles (tenantSyncs.enabled), named after the release.
    const chart = readFileSync('deploy/chart/kupenstack/templates/rbac-namespace-syncs.yaml', 'utf8');
    for (const end of ['-namespacesync-edit', '-namespacesync-view', '-controller-namespacesyncs']) expect(chart).toContain(`{{ include "kupenstack.fullname" . }}${end}`);
  });
});
