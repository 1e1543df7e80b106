import { describe, expect, it } from 'vitest';
import type { AdapterContext, Remote } from '../../agent/kinds/kit/adapter.ts';
import { adapters } from '../../agent/kinds/registry.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import type { OpenStackCloud, ProjectApis } from '../../agent/openstack/cloud.ts';
import { decide, planErrorMessage, type Inventory } from '../../agent/plan/decide.ts';
import { replaceHash } from '../../agent/plan/diff.ts';
import type { ValidatedRevision } from '../../agent/validate/validate.ts';
import { h, revisionMaker } from '../support/revisions.ts';

// The planner alone, given what observe would report: no OpenStack. Every call to a cloud fails the test.
const revision = revisionMaker('ks-adopt-');
const noCloud = new Proxy({}, { get: (_t, key) => { throw new Error(`the planner asked OpenStack (${String(key)})`); } });
const owner = 'ks-test';
const projectId = 'p-1';

const docs = [
  `${h('Volume', 'data')}  import: {id: vol-1, adopt: true}\n  size: 2\n`,
  `${h('Flavor', 'secret')}  import: {id: fl-1, adopt: true}\n  name: m1.secret\n  vcpus: 1\n  ram: 64\n  disk: 1\n`,
  `${h('Image', 'disk')}  import: {id: img-1, adopt: true}\n  diskFormat: raw\n  containerFormat: bare\n`,
  `${h('ProjectQuota', 'quotas')}  import: {id: ${projectId}, adopt: true}\n  compute: {instances: 7}\n`,
  `${h('KeyPair', 'key')}  managementPolicy: unmanaged\n  import: {id: ops-key}\n`,
];
const refused = [
  `${h('KeyPair', 'key2')}  import: {id: other-key, adopt: true}\n`,
  `${h('Volume', 'theirs')}  import: {id: vol-2, adopt: true}\n  size: 1\n`,
];

/** What the kinds' get() report for these objects, made without KupenStack (no marker unless given). */
const found: Record<string, Remote> = {
  't/Volume/data': { id: 'vol-1', name: 'data', status: 'in-use', raw: { id: 'vol-1' }, fields: { name: 'data', description: '', size: 2, volume_type: '__DEFAULT__', availability_zone: 'nova', imageRef: null, multiattach: false, metadata: {} } },
  't/Flavor/secret': {
    id: 'fl-1',
    name: 'm1.secret',
    raw: { id: 'fl-1', name: 'm1.secret', vcpus: 1, ram: 64, disk: 1 },
    fields: { name: 'm1.secret', description: '', vcpus: 1, ram: 64, disk: 1, swap: 0, 'OS-FLV-EXT-DATA:ephemeral': 0, rxtx_factor: 1, 'os-flavor-access:is_public': false, extra_specs: {}, access: [projectId] },
  },
  't/Image/disk': { id: 'img-1', name: 'disk', status: 'active', raw: { id: 'img-1' }, fields: { name: 'disk', disk_format: 'raw', container_format: 'bare', visibility: 'shared', protected: false, min_disk: 0, min_ram: 0, properties: {}, tags: [], source: null, digest: null } },
  't/ProjectQuota/quotas': { id: projectId, name: 'ks-t', raw: {}, fields: { 'compute.instances': 7, 'compute.cores': 20, 'network.network': 100 } },
  't/KeyPair/key': { id: 'ops-key', name: 'ops-key', raw: {}, fields: { name: 'ops-key', public_key: 'ssh-ed25519 AAAA', type: 'ssh' } },
  't/KeyPair/key2': { id: 'other-key', name: 'other-key', raw: {}, fields: { name: 'other-key', public_key: 'ssh-ed25519 BBBB', type: 'ssh' } },
  't/Volume/theirs': { id: 'vol-2', name: 'theirs', status: 'available', raw: { id: 'vol-2' }, marker: { owner: 'someone-else', ref: 'Volume/theirs', specHash: '00000000' }, fields: { name: 'theirs', description: '', size: 1, metadata: {} } },
};

function context(m: Manifest, idOf: (kind: string, name: string) => string): AdapterContext {
  return { cloud: noCloud as OpenStackCloud, apis: noCloud as ProjectApis, namespace: m.metadata.namespace!, projectId, projectName: 'ks-t', owner, idOf, memo: () => Promise.reject(new Error('the planner asked OpenStack (memo)')) };
}

/** The inventory observe makes: the imports resolved; `owned` what carries our marker already. */
function inventory(rev: ValidatedRevision, owned: ReadonlyMap<string, Remote>): Inventory {
  const imports = new Map(rev.manifests.filter((m) => found[m.address]).map((m) => [m.address, found[m.address]!]));
  return { owned, duplicates: [], imports, importErrors: new Map(), total: owned.size, offline: false, context, resources: {}, detached: () => true };
}

const options = { adapters, revision: 'head', against: 'live', prune: true, allowMassDelete: false, massDeleteThreshold: 0.5 };

/** The objects after apply wrote the markers: what observe reports on the next run. */
async function marked(rev: ValidatedRevision): Promise<Map<string, Remote>> {
  const out = new Map<string, Remote>();
  for (const m of rev.manifests) {
    if (m.spec.managementPolicy === 'unmanaged') continue;
    const adapter = adapters.get(m.kind)!;
    const desired = await adapter.desired(m, context(m, (kind, name) => found[`t/${kind}/${name}`]!.id));
    out.set(m.address, { ...found[m.address]!, marker: { owner, ref: `${m.kind}/${m.metadata.name}`, specHash: replaceHash(adapter, desired) } });
  }
  return out;
}

describe('adopt planning: Nova, Glance, Cinder and quota objects made without KupenStack', () => {
  it('an export of unowned objects plans only adopt (no create, update or delete), observe-only imports plan nothing', async () => {
    const rev = await revision(docs);
    const { plan, errors } = await decide(rev, inventory(rev, new Map()), options);
    expect(errors).toEqual([]);
    expect(plan.changes.map((c) => `${c.action} ${c.address} ${c.id ?? ''}`).sort()).toEqual(['adopt t/Flavor/secret fl-1', 'adopt t/Image/disk img-1', 'adopt t/ProjectQuota/quotas p-1', 'adopt t/Volume/data vol-1']);
    expect(plan.summary).toMatchObject({ create: 0, update: 0, replace: 0, delete: 0, adopt: 4 });
  });

  it('once the markers are written the same manifests plan nothing; a bigger volume is then an update of size', async () => {
    const rev = await revision(docs);
    const owned = await marked(rev);
    const again = await decide(rev, inventory(rev, owned), options);
    expect(again.errors).toEqual([]);
    expect(again.plan.changes).toEqual([]);
    expect(again.plan.drift).toEqual([]);
    expect(again.unchanged).toBe(4); // the observe-only key pair is not counted
    const bigger = await revision(docs.map((d) => d.replace('size: 2', 'size: 5')));
    const grown = await decide(bigger, inventory(bigger, owned), options);
    expect(grown.plan.changes.map((c) => [c.action, c.address, c.fields.map((f) => `${f.path}: ${String(f.before)} → ${String(f.after)}`)])).toEqual([['update', 't/Volume/data', ['size: 2 → 5']]]);
  });

  it('a key pair (no place for a marker) and an object another owner marked are refused by name, with the reason', async () => {
    const rev = await revision([...docs, ...refused]);
    const { plan, errors } = await decide(rev, inventory(rev, new Map()), options);
    const why = Object.fromEntries(errors.map((e) => [e.address, planErrorMessage(e)]));
    expect(why['t/KeyPair/key2']?.code).toBe('adopt.unsupported');
    expect(why['t/KeyPair/key2']?.message).toMatch(/^KeyPair cannot be adopted yet/);
    expect(why['t/Volume/theirs']?.code).toBe('adopt.owned-elsewhere');
    expect(why['t/Volume/theirs']?.message).toContain('vol-2 already carries the marker of owner someone-else');
    expect(plan.changes.map((c) => c.address)).not.toContain('t/KeyPair/key2');
    expect(plan.changes.map((c) => c.address)).not.toContain('t/Volume/theirs');
  });
});
