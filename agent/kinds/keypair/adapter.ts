import { KupenstackError } from '../../errors.ts';
import { specHash, type Marker } from '../../ownership/marker.ts';
import { bucket, type AdapterContext, type KindAdapter, type Ownership, type Remote } from '../kit/adapter.ts';

/**
 * Nova key pairs belong to the agent's USER, not to the project, and carry
 * no description, tags or metadata. So the name is the marker:
 * `<project>_<metadata.name>`. The project part makes it unique per
 * namespace; `_` never occurs in a manifest name (a DNS subdomain), so the
 * split is unambiguous and project "kst-a" never claims project
 * "kst-a-b"'s keys. Nova identifies key pairs by name: the Remote's id IS the
 * name (what a server's `key_name` takes). A key pair named like ours but made
 * by hand with the agent's user would be taken for ours: the price of a kind
 * without metadata.
 *
 * Nothing changes in place (Nova has no update), so the marker's spec hash is
 * computed from what Nova reports: any difference is a changed manifest.
 */

type RawKeyPair = { name: string; public_key?: string; type?: string; fingerprint?: string } & Record<string, unknown>;

const separator = '_';
const manifestName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** Characters Nova accepts in a key pair name before microversion 2.92 (which adds `.` and `@`). */
const legacyNameChars = /^[A-Za-z0-9 _-]+$/;

export function keyPairName(projectName: string, name: string): string {
  return `${projectName}${separator}${name}`;
}

/** The manifest name of one of this project's key pairs, or undefined for anyone else's. */
function manifestNameOf(ctx: Pick<AdapterContext, 'projectName'>, keyName: string): string | undefined {
  const prefix = `${ctx.projectName}${separator}`;
  if (!keyName.startsWith(prefix)) return undefined;
  const rest = keyName.slice(prefix.length);
  return manifestName.test(rest) ? rest : undefined;
}

function toRemote(ctx: Pick<AdapterContext, 'projectName' | 'owner'>, raw: RawKeyPair): Remote {
  const fields = { name: raw.name, public_key: raw.public_key, type: raw.type ?? 'ssh' };
  const name = manifestNameOf(ctx, raw.name);
  const marker: Marker | undefined = name ? { owner: ctx.owner, ref: `KeyPair/${name}`, specHash: specHash(fields) } : undefined;
  return { id: raw.name, name: raw.name, ...(marker ? { marker } : {}), fields, raw };
}

/**
 * Key pairs belong to a Keystone user, not to a project, and Nova shows a user its own only: the ones
 * KupenStack can read at all are those of the user it acts as (for every namespace alike). Of those, one
 * is the namespace's when its name is not another namespace's marker (`<another project>_<name>`, the
 * project one of this KupenStack's or named with its project prefix); a key pair named like this
 * namespace's own is its own. Nothing else can be proven, so no key pair is adoptable (the kind has no
 * marker to write: `adopt.unsupported` as well).
 */
export const keyPairOwnership: Ownership = {
  rule:
    "a key pair (a Keystone user's, no project field): one of the user KupenStack acts as is usable unless its name begins with another namespace's project name and an underscore; " +
    "one named with this namespace's project is its own (adoption is not supported: a key pair has no place for a marker)",
  standing(found, view) {
    const name = typeof found.raw.name === 'string' ? found.raw.name : found.id;
    if (manifestNameOf(view.ctx, name) !== undefined) return { is: 'own' };
    const cut = name.lastIndexOf(separator);
    const project = cut > 0 ? name.slice(0, cut) : undefined;
    if (project !== undefined && manifestName.test(name.slice(cut + 1)) && view.otherProject(project))
      return { is: 'foreign', whose: `is another namespace's (its name carries project ${project})` };
    return { is: 'usable', whose: 'is a key pair of the user KupenStack acts as, named by no namespace' };
  },
};

export const keyPair: KindAdapter = {
  kind: 'KeyPair',
  ownership: keyPairOwnership,
  service: 'compute',
  fields: { name: 'replace', public_key: 'replace', type: 'replace' },

  async observe(ctx) {
    const items = await ctx.apis.compute.list<{ keypair: RawKeyPair }>('/os-keypairs', 'keypairs');
    return items.filter((i) => manifestNameOf(ctx, i.keypair.name) !== undefined).map((i) => toRemote(ctx, i.keypair));
  },

  async observeCloud(ctx) {
    // The agent's user holds them all: one list, split by the project part of the name (manifest names have no `_`).
    const byName = new Map([...ctx.projects].map(([id, p]) => [p.name, { id, ...p }]));
    const compute = await ctx.cloud.adminCompute();
    const out = new Map<string, Remote[]>();
    for (const { keypair } of await compute.list<{ keypair: RawKeyPair }>('/os-keypairs', 'keypairs')) {
      const project = byName.get(keypair.name.slice(0, keypair.name.lastIndexOf(separator)));
      if (!project) continue;
      const view = { projectName: project.name, owner: ctx.owner };
      if (manifestNameOf(view, keypair.name) !== undefined) bucket(out, project.id, toRemote(view, keypair));
    }
    return out;
  },

  desired(m, ctx) {
    if (typeof m.spec.name === 'string' && m.spec.name !== m.metadata.name) {
      throw new KupenstackError(
        'keypair.name',
        `spec.name "${m.spec.name}" differs from metadata.name "${m.metadata.name}": a key pair carries no ownership marker, ` +
          `so its Nova name (${keyPairName(ctx.projectName, m.metadata.name)}) is derived from metadata.name alone; remove spec.name or rename the manifest`,
      );
    }
    // Always all three: they are the marker's spec hash (see above).
    const out: Record<string, unknown> = { name: keyPairName(ctx.projectName, m.metadata.name), type: typeof m.spec.type === 'string' ? m.spec.type : 'ssh' };
    if (typeof m.spec.publicKey === 'string') out.public_key = m.spec.publicKey;
    return out;
  },

  async create(ctx, _m, desired) {
    const name = String(desired.name);
    // Names with `.` (allowed in manifest names) need microversion 2.92.
    const headers: Record<string, string> = legacyNameChars.test(name)
      ? {}
      : { 'openstack-api-version': 'compute 2.92', 'x-openstack-nova-api-version': '2.92' };
    const res = await ctx.apis.compute.call<{ keypair: RawKeyPair }>('POST', '/os-keypairs', {
      json: { keypair: { name, public_key: desired.public_key, type: desired.type } },
      headers,
      signal: ctx.signal,
    });
    return toRemote(ctx, res.body.keypair);
  },

  // Every field is `replace`: Nova cannot change a key pair, so there is never anything to update.
  async update() {},

  async delete(ctx, remote) {
    await ctx.apis.compute.remove(`/os-keypairs/${encodeURIComponent(remote.id)}`);
  },

  async get(ctx, id) {
    const res = await ctx.apis.compute.find<{ keypair: RawKeyPair }>(`/os-keypairs/${encodeURIComponent(id)}`);
    return res ? toRemote(ctx, res.keypair) : undefined;
  },

  async find(ctx, filter) {
    if (filter.tags?.length || filter.description !== undefined) return [];
    const items = await ctx.apis.compute.list<{ keypair: RawKeyPair }>('/os-keypairs', 'keypairs');
    return items.filter((i) => i.keypair.name === filter.name).map((i) => toRemote(ctx, i.keypair));
  },
};
