import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveImports, type ImportJudge } from '../../agent/act/imports.ts';
import type { ProjectContext } from '../../agent/act/context.ts';
import { refusalOf } from '../../agent/act/refusals.ts';
import type { AdapterContext, KindAdapter, OwnershipView, Remote, Standing } from '../../agent/kinds/kit/adapter.ts';
import { adapters } from '../../agent/kinds/registry.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import type { OpenStackCloud, ProjectApis } from '../../agent/openstack/cloud.ts';
import { KupenstackError } from '../../agent/errors.ts';
import { h, revisionMaker } from '../support/revisions.ts';

/*
 * Issue 47: what "the namespace's project owns it" means, kind by kind (KindAdapter.ownership), and the
 * import resolution that asks it: an adoption needs the project's own object, an import its own or one
 * it may use; an admin namespace keeps the admin's reach; a marker not this manifest's is refused.
 */
const mine = 'p-mine';
const other = 'p-other';

/** The view an entry judges with: the project, the flavors' access lists (an admin read), the other namespaces' project names. */
function view(access: Record<string, string[]> = {}, others: readonly string[] = []): OwnershipView {
  const compute = {
    get: (path: string) => {
      const id = /\/flavors\/([^/]+)\/os-flavor-access$/.exec(path)?.[1] ?? '';
      return Promise.resolve({ flavor_access: (access[id] ?? []).map((tenant_id) => ({ tenant_id })) });
    },
  };
  const ctx = { projectId: mine, projectName: 'ks-mine', cloud: { adminCompute: () => Promise.resolve(compute) } } as unknown as AdapterContext;
  return { ctx, otherProject: (name) => others.includes(name) };
}

const remote = (raw: Record<string, unknown>): Remote => ({ id: typeof raw.id === 'string' ? raw.id : 'x', raw, fields: {} });

type Case = [what: string, raw: Record<string, unknown>, is: Standing['is'], v?: OwnershipView];

/** Every kind, its own object and another's (usable where the kind has such a thing). */
const table: Record<string, Case[]> = {
  Network: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
    ["another project's, shared", { project_id: other, shared: true }, 'usable'],
    ['an external one', { project_id: other, 'router:external': true }, 'usable'],
  ],
  Subnet: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
  ],
  SecurityGroup: [
    ['its tenant_id', { tenant_id: mine }, 'own'],
    ["another project's", { tenant_id: other }, 'foreign'],
  ],
  Router: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
  ],
  Port: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
  ],
  FloatingIP: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
  ],
  Flavor: [
    ['private, the project alone in its access list', { id: 'f1', 'os-flavor-access:is_public': false }, 'own', view({ f1: [mine] })],
    ['public (the cloud’s)', { id: 'f2', 'os-flavor-access:is_public': true }, 'usable', view()],
    ['public by omission (Nova’s default)', { id: 'f3' }, 'usable', view()],
    ['private, shared with another project too', { id: 'f4', 'os-flavor-access:is_public': false }, 'usable', view({ f4: [mine, other] })],
    ['private to another project', { id: 'f5', 'os-flavor-access:is_public': false }, 'foreign', view({ f5: [other] })],
    ['private, no access at all', { id: 'f6', 'os-flavor-access:is_public': false }, 'foreign', view({ f6: [] })],
  ],
  KeyPair: [
    ["named as this namespace's", { name: 'ks-mine_deploy' }, 'own'],
    ["named as another namespace's", { name: 'ks-other_deploy' }, 'foreign', view({}, ['ks-other'])],
    ['named by no namespace (made by hand with the same user)', { name: 'ops-key' }, 'usable', view({}, ['ks-other'])],
  ],
  ServerGroup: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
  ],
  Image: [
    ['its owner', { owner: mine, visibility: 'private' }, 'own'],
    ["another project's, private", { owner: other, visibility: 'private' }, 'foreign'],
    ["another project's, shared with some", { owner: other, visibility: 'shared' }, 'foreign'],
    ['public', { owner: other, visibility: 'public' }, 'usable'],
    ['community', { owner: other, visibility: 'community' }, 'usable'],
  ],
  Volume: [
    ['its os-vol-tenant-attr:tenant_id', { 'os-vol-tenant-attr:tenant_id': mine }, 'own'],
    ["another project's", { 'os-vol-tenant-attr:tenant_id': other }, 'foreign'],
  ],
  VolumeSnapshot: [
    ['its os-extended-snapshot-attributes:project_id', { 'os-extended-snapshot-attributes:project_id': mine }, 'own'],
    ["another project's (Cinder's extension key, no other project field)", { 'os-extended-snapshot-attributes:project_id': other }, 'foreign'],
  ],
  ProjectQuota: [
    ["the namespace's own project", { id: mine }, 'own'],
    ['another project', { id: other }, 'foreign'],
  ],
  ApplicationCredential: [['never another’s (not even one naming the project)', { id: 'c', project_id: mine }, 'foreign']],
  VirtualMachine: [
    ['its tenant_id', { tenant_id: mine }, 'own'],
    ["another project's", { tenant_id: other }, 'foreign'],
  ],
  LoadBalancer: [
    ['its project_id', { project_id: mine }, 'own'],
    ["another project's", { project_id: other }, 'foreign'],
  ],
};

/** One row per case: the kind, then the case. */
const rows: [string, ...Case][] = Object.entries(table).flatMap(([kind, cases]) => cases.map((c): [string, ...Case] => [kind, ...c]));

describe('the ownership table', () => {
  it('has an entry for every kind, each judged both ways (own, and not)', () => {
    expect(Object.keys(table).sort()).toEqual([...adapters.keys()].sort());
    for (const [kind, cases] of Object.entries(table)) {
      if (kind === 'ApplicationCredential') continue;
      expect(
        cases.map((c) => c[2]),
        kind,
      ).toContain('own');
      expect(
        cases.some((c) => c[2] !== 'own'),
        kind,
      ).toBe(true);
    }
  });

  it.each(rows)('%s: %s', async (kind, _what, raw, is, v) => {
    const standing = await adapters.get(kind)!.ownership.standing(remote(raw), v ?? view());
    expect(standing.is).toBe(is);
  });

  it('a project-field kind whose answer names no project is usable (its token saw it), never adoptable', async () => {
    expect((await adapters.get('Network')!.ownership.standing(remote({ id: 'n' }), view())).is).toBe('usable');
  });

  it("docs/explanation/security.md states every kind's rule, word for word", () => {
    const page = readFileSync(join(import.meta.dirname, '../../docs/explanation/security.md'), 'utf8');
    expect([...adapters.keys()].sort()).toEqual(Object.keys(table).sort());
    for (const [kind, a] of adapters) expect(page, kind).toContain(`| ${kind} | ${a.ownership.rule} |`);
  });
});

// -- import resolution --------------------------------------------------------------------------

const revision = revisionMaker('ks-own-');
const owner = 'ks-test';

/** A kind whose get() answers `found` by id, with the real kind's ownership; what it was read with is kept. */
function kindAnswering(kind: string, found: Record<string, Remote>, reads: string[]): KindAdapter {
  const real = adapters.get(kind)!;
  return {
    ...real,
    get: (ctx, id) => {
      reads.push(`${kind} ${id} ${(ctx.apis as unknown as { admin?: boolean }).admin === true ? 'admin' : 'project'}`);
      return Promise.resolve(found[id]);
    },
  };
}

const adminApis = { admin: true } as unknown as ProjectApis;

function contextOf(ns: string, v: OwnershipView): ProjectContext {
  const ctx = { ...v.ctx, namespace: ns, owner, apis: { project: true } as unknown as ProjectApis };
  return { ctx, ids: new Map(), remotes: new Map(), imports: new Map() };
}

async function resolve(docs: string[], found: Record<string, Remote>, opts: { admin?: boolean; access?: Record<string, string[]>; others?: string[] } = {}) {
  const rev = await revision(docs);
  const reads: string[] = [];
  const kinds = new Map([...new Set(rev.manifests.map((m: Manifest) => m.kind))].map((k) => [k, kindAnswering(k, found, reads)]));
  const v = view(opts.access ?? {}, opts.others ?? []);
  const judge: ImportJudge = {
    cloud: { adminApis: () => Promise.resolve({ ...adminApis }) } as unknown as OpenStackCloud,
    owner,
    adapters: kinds,
    ...(opts.admin ? { adminNamespaces: new Set(['t']) } : {}),
    otherProject: (name) => (opts.others ?? []).includes(name),
  };
  const out = await resolveImports(rev.manifests, new Map([['t', contextOf('t', v)]]), judge);
  const errors = Object.fromEntries(
    [...out.importErrors].map(([a, e]) => [a, e instanceof KupenstackError ? { code: e.code, message: e.message } : { code: 'internal', message: String(e) }]),
  );
  return { imports: out.imports, errors, reads };
}

const flavorDoc = (name: string, id: string, adopt = true): string =>
  `${h('Flavor', name)}  import: {id: ${id}${adopt ? ', adopt: true' : ''}}\n  name: ${name}\n  vcpus: 1\n  ram: 64\n  disk: 1\n`;
const flavorRemote = (id: string, isPublic: boolean, marker?: Remote['marker']): Remote => ({
  id,
  raw: { id, 'os-flavor-access:is_public': isPublic },
  fields: {},
  ...(marker ? { marker } : {}),
});

describe('imports and adoptions are judged by the ownership table', () => {
  it("a tenant's adoption of a public flavor and of another project's private one is import.foreign, naming file:line and the rule", async () => {
    const { errors, imports } = await resolve(
      [flavorDoc('pub', 'f-pub'), flavorDoc('theirs', 'f-theirs')],
      { 'f-pub': flavorRemote('f-pub', true), 'f-theirs': flavorRemote('f-theirs', false) },
      { access: { 'f-theirs': [other] } },
    );
    expect(imports.size).toBe(0);
    expect(errors['t/Flavor/pub']?.code).toBe('import.foreign');
    expect(errors['t/Flavor/pub']?.message).toMatch(
      /^all\.yaml:\d+: the Flavor f-pub to adopt is public: the cloud's, made by an admin for every project, not this namespace's project \(p-mine\)/,
    );
    expect(errors['t/Flavor/pub']?.message).toContain(`owned means ${adapters.get('Flavor')!.ownership.rule}`);
    expect(errors['t/Flavor/theirs']?.message).toContain(`the Flavor f-theirs to adopt is private to other projects (${other})`);
    // Refusals, not failures a retry fixes: the objects are Stalled.
    expect(Object.keys(errors).sort()).toEqual(['t/Flavor/pub', 't/Flavor/theirs']);
    for (const e of Object.values(errors)) expect(refusalOf(new KupenstackError(e.code, e.message))?.reason).toBe('ImportRefused');
  });

  it('its own private flavor (the project alone in the access list) is adopted', async () => {
    const { errors, imports } = await resolve([flavorDoc('mine', 'f-mine')], { 'f-mine': flavorRemote('f-mine', false) }, { access: { 'f-mine': [mine] } });
    expect(errors).toEqual({});
    expect(imports.get('t/Flavor/mine')?.id).toBe('f-mine');
  });

  it('a public flavor is still imported observe-only (usable), not adopted', async () => {
    const { errors, imports } = await resolve([`${h('Flavor', 'pub')}  managementPolicy: unmanaged\n  import: {id: f-pub}\n`], {
      'f-pub': flavorRemote('f-pub', true),
    });
    expect(errors).toEqual({});
    expect(imports.get('t/Flavor/pub')?.id).toBe('f-pub');
  });

  it("another namespace's key pair and another project's snapshot are refused even observe-only", async () => {
    const { errors } = await resolve(
      [
        `${h('KeyPair', 'k')}  managementPolicy: unmanaged\n  import: {id: ks-other_deploy}\n`,
        `${h('VolumeSnapshot', 's')}  managementPolicy: unmanaged\n  import: {id: snap-1}\n`,
      ],
      {
        'ks-other_deploy': { id: 'ks-other_deploy', raw: { name: 'ks-other_deploy' }, fields: {} },
        'snap-1': { id: 'snap-1', raw: { id: 'snap-1', 'os-extended-snapshot-attributes:project_id': other }, fields: {} },
      },
      { others: ['ks-other'] },
    );
    expect(errors['t/KeyPair/k']?.code).toBe('import.foreign');
    expect(errors['t/KeyPair/k']?.message).toContain("the KeyPair ks-other_deploy to import is another namespace's (its name carries project ks-other)");
    expect(errors['t/VolumeSnapshot/s']?.code).toBe('import.foreign');
    expect(errors['t/VolumeSnapshot/s']?.message).toContain(`the VolumeSnapshot snap-1 to import belongs to another project (${other})`);
  });

  it('an admin namespace reads by id with the admin scope and keeps its reach: the same manifests resolve', async () => {
    const docs = [
      flavorDoc('pub', 'f-pub'),
      flavorDoc('theirs', 'f-theirs'),
      `${h('KeyPair', 'k')}  managementPolicy: unmanaged\n  import: {id: ks-other_deploy}\n`,
      `${h('VolumeSnapshot', 's')}  managementPolicy: unmanaged\n  import: {id: snap-1}\n`,
    ];
    const found = {
      'f-pub': flavorRemote('f-pub', true),
      'f-theirs': flavorRemote('f-theirs', false),
      'ks-other_deploy': { id: 'ks-other_deploy', raw: { name: 'ks-other_deploy' }, fields: {} },
      'snap-1': { id: 'snap-1', raw: { id: 'snap-1', 'os-extended-snapshot-attributes:project_id': other }, fields: {} },
    };
    const tenant = await resolve(docs, found, { access: { 'f-theirs': [other] }, others: ['ks-other'] });
    expect(Object.keys(tenant.errors).sort()).toEqual(['t/Flavor/pub', 't/Flavor/theirs', 't/KeyPair/k', 't/VolumeSnapshot/s']);
    expect(tenant.reads.every((r) => r.endsWith(' project'))).toBe(true);
    const admin = await resolve(docs, found, { admin: true, access: { 'f-theirs': [other] }, others: ['ks-other'] });
    expect(admin.errors).toEqual({});
    expect([...admin.imports.keys()].sort()).toEqual(['t/Flavor/pub', 't/Flavor/theirs', 't/KeyPair/k', 't/VolumeSnapshot/s']);
    expect(admin.reads.sort()).toEqual(['Flavor f-pub admin', 'Flavor f-theirs admin', 'KeyPair ks-other_deploy admin', 'VolumeSnapshot snap-1 admin']);
  });

  it("an adoption of what carries another manifest's marker (same owner) or another owner's is refused, in an admin namespace too", async () => {
    const found = {
      'f-a': flavorRemote('f-a', false, { owner, ref: 'Flavor/somebody-else', specHash: '00000000' }),
      'f-b': flavorRemote('f-b', false, { owner: 'another-owner', ref: 'Flavor/b', specHash: '00000000' }),
      'f-c': flavorRemote('f-c', false, { owner, ref: 'Flavor/c', specHash: '00000000' }),
    };
    const docs = [flavorDoc('a', 'f-a'), flavorDoc('b', 'f-b'), flavorDoc('c', 'f-c')];
    for (const admin of [false, true]) {
      const { errors, imports } = await resolve(docs, found, { admin, access: { 'f-a': [mine], 'f-b': [mine], 'f-c': [mine] } });
      expect(errors['t/Flavor/a']?.code, `admin: ${admin}`).toBe('import.foreign');
      expect(errors['t/Flavor/a']?.message).toContain(
        `carries the marker of another manifest (Flavor/somebody-else, owner ${owner}), not Flavor/a of namespace t`,
      );
      expect(errors['t/Flavor/b']?.code).toBe('adopt.owned-elsewhere');
      expect(refusalOf(new KupenstackError('adopt.owned-elsewhere', 'x'))?.reason).toBe('ImportRefused');
      // Its own marker (adopted by this manifest already) is its own.
      expect([...imports.keys()]).toEqual(['t/Flavor/c']);
    }
  });
});
