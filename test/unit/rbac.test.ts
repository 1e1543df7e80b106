import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';

/** deploy/rbac must follow the kinds: a kind added to schemas/ is granted, or deliberately not. */

interface Rule { apiGroups: string[]; resources: string[]; verbs: string[] }
interface Doc { kind: string; metadata: { name: string; labels?: Record<string, string> }; rules?: Rule[] }
const dir = join(import.meta.dirname, '../../deploy/rbac');
const docs = ['tenant-roles.yaml', 'controller.yaml'].flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Doc));
const role = (name: string): Doc => docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === name)!;
const registry = loadSchemaRegistry();
const kinds = [...registry.kinds.values()];
const plurals = (scope?: string) => kinds.filter((k) => !scope || k.scope === scope).map((k) => k.plural).sort();
const granted = (r: Doc, verb: string, suffix = '') =>
  (r.rules ?? []).filter((x) => x.apiGroups.includes('kupenstack.io') && x.verbs.includes(verb)).flatMap((x) => x.resources).filter((x) => (suffix ? x.endsWith(suffix) : !x.includes('/'))).map((x) => x.replace(suffix, '')).sort();

describe('deploy/rbac', () => {
  it('kupenstack-edit lets a tenant write every namespaced kind but ProjectQuota, and is aggregated into edit and admin', () => {
    const edit = role('kupenstack-edit');
    expect(edit.metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-edit': 'true', 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' });
    expect(granted(edit, 'create')).toEqual(plurals('Namespaced').filter((p) => p !== 'projectquotas'));
    expect(granted(edit, 'get')).toEqual(plurals('Namespaced'));
    expect(granted(edit, 'update', '/status')).toEqual([]);
  });

  it('kupenstack-view reads every namespaced kind and is aggregated into view', () => {
    const view = role('kupenstack-view');
    expect(view.metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-view': 'true' });
    for (const verb of ['get', 'list', 'watch']) expect(granted(view, verb)).toEqual(plurals('Namespaced'));
    expect([...new Set(view.rules!.flatMap((r) => r.verbs))].sort()).toEqual(['get', 'list', 'watch']);
  });

  it('the controller watches every kind, writes status and finalizers, and never creates or deletes a resource', () => {
    const c = role('kupenstack-controller');
    expect(granted(c, 'watch')).toEqual(plurals());
    expect(granted(c, 'patch', '/status')).toEqual(plurals());
    expect(granted(c, 'update', '/finalizers')).toEqual(plurals());
    expect(granted(c, 'create')).toEqual([]);
    expect(granted(c, 'delete')).toEqual([]);
    const secrets = c.rules!.find((r) => r.resources.includes('secrets'))!;
    expect(secrets.verbs.sort()).toEqual(['get', 'list', 'watch']);
    // Leases only through a Role in its own namespace.
    expect(c.rules!.some((r) => r.resources.includes('leases'))).toBe(false);
    expect(docs.find((d) => d.kind === 'Role')?.rules?.[0]?.resources).toEqual(['leases']);
    // The create journal: ConfigMaps through the same Role (its own namespace), never cluster-wide.
    expect(c.rules!.some((r) => r.resources.includes('configmaps'))).toBe(false);
    expect(docs.find((d) => d.kind === 'Role')?.rules?.[1]).toMatchObject({ resources: ['configmaps'], verbs: ['get', 'create', 'update'] });
  });
});
