import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { KupenstackError } from '../../errors.ts';
import type { VirtualMachineSpec } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import { describeSecret } from '../../secrets/resolver.ts';
import { markerFromMetadata, markerMetadata, ownerTag, ownerTagPrefix, parseDescriptionMarker } from '../../ownership/marker.ts';
import { bucket, isPlaceholderId, lookedUpId, openstackName, type AdapterContext, type KindAdapter, type Remote } from '../adapter.ts';
import { cloudPageSize, neutronListByIds } from '../neutron.ts';
import { isSettled, powerAction, powerStateOf, resetToActive, serverAction, serverHealth, showServer, waitForServer, type NovaServer, type PowerState } from '../nova-server.ts';

/**
 * Nova servers. The marker rides in the create call itself (owner tag +
 * metadata); the Glance image is recorded by manifest name in
 * `kupenstack_image`, so a different Image manifest (always a rebuild) is
 * told apart from a new version of the same one (rebuild only with
 * `onImageUpdate: rebuild`).
 */

/**
 * Replace fields Nova does not show back (user data, requested fixed IPs, the
 * boot volume request): absent from observed fields, judged by the spec hash alone.
 */
export const vmUnobservedFields: readonly string[] = ['user_data', 'fixed_ips', 'boot_volume'];

const metaImage = 'kupenstack_image';

interface FlavorView {
  name: string;
  vcpus: number;
  ram: number;
  disk: number;
  ephemeral: number;
  swap: number;
}

interface NovaFlavor {
  id: string;
  name: string;
  vcpus: number;
  ram: number;
  disk: number;
  'OS-FLV-EXT-DATA:ephemeral'?: number;
  swap?: number | '';
}

interface NeutronPort {
  id: string;
  network_id: string;
  device_id: string;
  mac_address: string;
  description?: string;
  security_groups?: string[];
}

type Nic = { uuid: string } | { port: string };

// The validator has checked the spec against the schema.
const specOf = (m: Manifest): VirtualMachineSpec => m.spec;

const uniqSorted = (xs: readonly string[]): string[] => [...new Set(xs)].sort();

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

const record = (v: unknown): Record<string, string> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {});

function sortedRecord(r: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function flavorView(f: NovaFlavor): FlavorView {
  return { name: f.name, vcpus: f.vcpus, ram: f.ram, disk: f.disk, ephemeral: f['OS-FLV-EXT-DATA:ephemeral'] ?? 0, swap: Number(f.swap) || 0 };
}

/**
 * Since compute 2.47 a server shows a copy of its flavor without the id, so
 * the flavor is compared by name and sizes: a Flavor manifest replaced under
 * the same name with other sizes still reads as a change (a resize).
 */
function serverFlavor(s: NovaServer): FlavorView | undefined {
  const f = s.flavor;
  if (!f) return undefined;
  return { name: f.original_name ?? '', vcpus: f.vcpus ?? 0, ram: f.ram ?? 0, disk: f.disk ?? 0, ephemeral: f.ephemeral ?? 0, swap: Number(f.swap) || 0 };
}

/** A flavor as Nova's flavor list or create answers it: everything flavorView reads. */
function isNovaFlavor(raw: Record<string, unknown>): raw is Record<string, unknown> & NovaFlavor {
  return typeof raw.name === 'string' && typeof raw.vcpus === 'number' && typeof raw.ram === 'number' && typeof raw.disk === 'number';
}

/** A flavor nobody could ask Nova about yet (a plan): its name only, no made-up sizes. */
const placeholderFlavor = (name: string): { name: string } => ({ name });

async function resolveFlavor(ctx: AdapterContext, spec: VirtualMachineSpec): Promise<{ id: string; view: FlavorView | { name: string } }> {
  if (spec.flavorRef) {
    const id = ctx.idOf('Flavor', spec.flavorRef.name);
    if (isPlaceholderId(id)) return { id, view: placeholderFlavor(id) };
    // A flavor's sizes never change under its id: what the Flavor kind listed or made this run is
    // used as is (no GET per project at scale). Else read with the admin scope (where Flavor
    // manifests are made): it does not depend on the project's access yet.
    const seen = ctx.remoteOf?.('Flavor', spec.flavorRef.name);
    if (seen?.id === id && isNovaFlavor(seen.raw)) return { id, view: flavorView(seen.raw) };
    const f = await ctx.memo(`VirtualMachine:flavor:${id}`, async () => (await (await ctx.cloud.adminCompute()).get<{ flavor: NovaFlavor }>(`/flavors/${id}`)).flavor);
    return { id, view: flavorView(f) };
  }
  const name = spec.flavorName;
  if (!name) throw new KupenstackError('vm.spec', 'a VirtualMachine needs flavorRef or flavorName');
  if (ctx.offline) return { id: lookedUpId(`public flavor ${name}`), view: placeholderFlavor(name) };
  const flavors = await ctx.memo('VirtualMachine:public-flavors', () => ctx.apis.compute.list<NovaFlavor>('/flavors/detail', 'flavors', { is_public: true }));
  const f = flavors.find((x) => x.name === name);
  if (!f) throw new KupenstackError('vm.flavor-not-found', `flavorName "${name}": no public Nova flavor has this name (for a private one, declare a Flavor manifest and use flavorRef)`);
  return { id: f.id, view: flavorView(f) };
}

/**
 * Base64 user data, as Nova takes it: inline, or read through the context's
 * SecretResolver (the manifest's namespace, default key `userData`). Offline
 * (plan --base) a secret stands for itself: the same reference, the same value.
 */
async function userData(spec: VirtualMachineSpec, ctx: AdapterContext): Promise<string | undefined> {
  const ref = spec.userDataSecretRef;
  if (ref) {
    const key = { name: ref.name, namespace: ctx.namespace, key: ref.key ?? 'userData' };
    if (ctx.offline) return Buffer.from(lookedUpId(`user data of ${describeSecret(key)}`), 'utf8').toString('base64');
    if (!ctx.secrets) throw new KupenstackError('vm.user-data-secret', `spec.userDataSecretRef: ${describeSecret(key)} cannot be read here (no secret resolver); put the user data in spec.userData`);
    return Buffer.from(await ctx.secrets.get(key), 'utf8').toString('base64');
  }
  return spec.userData === undefined ? undefined : Buffer.from(spec.userData, 'utf8').toString('base64');
}

/** Plans show a digest, not the payload (which may be long or sensitive). */
const digest = (data: string): string => `sha256:${createHash('sha256').update(data).digest('hex').slice(0, 16)}`;

function desiredNics(ctx: AdapterContext, spec: VirtualMachineSpec): { nics: Nic[]; body: Record<string, string>[] } {
  const nics: Nic[] = [];
  const body: Record<string, string>[] = [];
  for (const n of spec.networks ?? []) {
    if (n.portRef) {
      const port = ctx.idOf('Port', n.portRef.name);
      nics.push({ port });
      body.push({ port });
    } else if (n.networkRef) {
      const uuid = ctx.idOf('Network', n.networkRef.name);
      nics.push({ uuid });
      body.push(n.fixedIP ? { uuid, fixed_ip: n.fixedIP } : { uuid });
    }
  }
  return { nics, body };
}

function bootVolumeOf(ctx: AdapterContext, spec: VirtualMachineSpec): Record<string, unknown> | undefined {
  const bv = spec.bootVolume;
  if (!bv) return undefined;
  const deleteOnTermination = bv.deleteOnTermination ?? true;
  if (bv.volumeRef) return { source: 'volume', id: ctx.idOf('Volume', bv.volumeRef.name), delete_on_termination: deleteOnTermination };
  const image = bv.imageRef?.name ?? '';
  // By name, like `image`: a new version of the image replaces the server only when asked to.
  const out: Record<string, unknown> = { source: 'image', image, size: bv.size, delete_on_termination: deleteOnTermination };
  if (bv.volumeType) out.volume_type = bv.volumeType;
  if (spec.onImageUpdate === 'rebuild') out.image_id = ctx.idOf('Image', image);
  return out;
}

function bootVolumeBody(ctx: AdapterContext, spec: VirtualMachineSpec): Record<string, unknown> | undefined {
  const bv = spec.bootVolume;
  if (!bv) return undefined;
  const out: Record<string, unknown> = { boot_index: 0, destination_type: 'volume', delete_on_termination: bv.deleteOnTermination ?? true };
  if (bv.volumeRef) return { ...out, source_type: 'volume', uuid: ctx.idOf('Volume', bv.volumeRef.name) };
  return { ...out, source_type: 'image', uuid: ctx.idOf('Image', bv.imageRef?.name ?? ''), volume_size: bv.size, ...(bv.volumeType ? { volume_type: bv.volumeType } : {}) };
}

const imageIdOf = (s: NovaServer): string | undefined => (typeof s.image === 'object' && s.image.id ? s.image.id : undefined);

/** A Port manifest's port (it carries a KupenStack marker); the rest were made by Nova from a network. */
const isPortManifest = (p: NeutronPort): boolean => parseDescriptionMarker(p.description).marker?.ref.startsWith('Port/') ?? false;

/**
 * NICs in boot order. Neutron ports have no order; Nova's `addresses` lists
 * NICs in order, grouped by network name, so MAC order is the NIC order
 * (except for NICs on one network split by another, which come together).
 */
function nicsOf(s: NovaServer, ports: NeutronPort[]): { nics: Nic[]; novaPorts: NeutronPort[] } {
  const macs: string[] = [];
  for (const addrs of Object.values(s.addresses ?? {})) {
    for (const a of addrs) {
      const mac = a['OS-EXT-IPS-MAC:mac_addr'];
      if (mac && !macs.includes(mac)) macs.push(mac);
    }
  }
  const rank = (p: NeutronPort): number => {
    const i = macs.indexOf(p.mac_address);
    return i < 0 ? macs.length : i;
  };
  const ordered = [...ports].sort((a, b) => rank(a) - rank(b) || (a.id < b.id ? -1 : 1));
  return { nics: ordered.map((p) => (isPortManifest(p) ? { port: p.id } : { uuid: p.network_id })), novaPorts: ordered.filter((p) => !isPortManifest(p)) };
}

/** Attached data volumes. A volume-backed server lists its root volume first (Nova's block device order). */
function dataVolumes(s: NovaServer): string[] {
  const all = (s['os-extended-volumes:volumes_attached'] ?? []).map((v) => v.id);
  return uniqSorted(imageIdOf(s) ? all : all.slice(1));
}

const userMetadata = (meta: Record<string, string> | undefined): Record<string, string> => sortedRecord(Object.fromEntries(Object.entries(meta ?? {}).filter(([k]) => !k.startsWith('kupenstack_'))));

const userTags = (tags: string[] | undefined): string[] => uniqSorted((tags ?? []).filter((t) => !t.startsWith(ownerTagPrefix)));

function toRemote(s: NovaServer, ports: NeutronPort[]): Remote {
  const { nics, novaPorts } = nicsOf(s, ports);
  return {
    id: s.id,
    name: s.name,
    status: s.status,
    marker: markerFromMetadata(s.metadata),
    raw: s as unknown as Record<string, unknown>,
    fields: {
      name: s.name,
      description: s.description ?? '',
      metadata: userMetadata(s.metadata),
      tags: userTags(s.tags),
      power_state: powerStateOf(s),
      flavor: serverFlavor(s),
      image: s.metadata?.[metaImage],
      image_id: imageIdOf(s),
      volumes: dataVolumes(s),
      security_groups: novaPorts.length > 0 ? uniqSorted(novaPorts.flatMap((p) => p.security_groups ?? [])) : undefined,
      networks: nics,
      key_name: s.key_name ?? undefined,
      availability_zone: s['OS-EXT-AZ:availability_zone'] || undefined,
      config_drive: s.config_drive === true || String(s.config_drive).toLowerCase() === 'true',
    },
  };
}

/** What `kubectl get ksvm` shows: Nova's status, the power state, the image and the addresses (fixed before floating). */
function serverReport(s: NovaServer): Record<string, unknown> {
  if (s.status === undefined) return {};
  const addresses = Object.entries(s.addresses ?? {})
    .flatMap(([network, list]) =>
      list
        .filter((a) => typeof a.addr === 'string')
        .map((a) => ({ network, address: a.addr!, type: a['OS-EXT-IPS:type'] === 'floating' ? 'floating' : 'fixed', ...(a['OS-EXT-IPS-MAC:mac_addr'] ? { macAddress: a['OS-EXT-IPS-MAC:mac_addr'] } : {}) })),
    )
    .sort((a, b) => (a.type === b.type ? 0 : a.type === 'fixed' ? -1 : 1));
  const imageId = imageIdOf(s);
  return { serverStatus: s.status, powerState: powerStateOf(s) ?? 'unknown', ...(imageId ? { imageID: imageId } : {}), addresses };
}

function byDevice(ports: NeutronPort[]): Map<string, NeutronPort[]> {
  const out = new Map<string, NeutronPort[]>();
  for (const p of ports) out.set(p.device_id, [...(out.get(p.device_id) ?? []), p]);
  return out;
}

async function withPorts(ctx: AdapterContext, servers: NovaServer[]): Promise<Remote[]> {
  if (servers.length === 0) return [];
  // One list for the project's ports: NIC networks and security groups live in Neutron.
  const ports = byDevice(await ctx.apis.network.list<NeutronPort>('/ports', 'ports', { project_id: ctx.projectId }));
  return servers.map((s) => toRemote(s, ports.get(s.id) ?? []));
}

/** PAUSED and SUSPENDED servers can be neither resized nor rebuilt: back to ACTIVE first. */
async function wakeUp(ctx: AdapterContext, s: NovaServer): Promise<NovaServer> {
  const action = s.status === 'PAUSED' ? { unpause: null } : s.status === 'SUSPENDED' ? { resume: null } : undefined;
  if (!action) return s;
  await serverAction(ctx, s.id, action);
  return waitForServer(ctx, s.id, 'the server to be ACTIVE', (x) => isSettled(x) && x.status === 'ACTIVE');
}

/** Resize and confirm (a resize left unconfirmed, e.g. by a crash, is only confirmed). */
async function resize(ctx: AdapterContext, current: NovaServer, spec: VirtualMachineSpec): Promise<NovaServer> {
  const { id: flavorRef, view } = await resolveFlavor(ctx, spec);
  let s = current;
  if (s.status !== 'VERIFY_RESIZE') {
    s = await wakeUp(ctx, s);
    await serverAction(ctx, s.id, { resize: { flavorRef } });
    s = await waitForServer(ctx, s.id, `the resize to ${view.name}`, (x) => x.status === 'VERIFY_RESIZE' || isSettled(x));
    // Nova puts a server whose resize could not start (no host, say) back as it was, without ERROR.
    if (s.status !== 'VERIFY_RESIZE') throw new KupenstackError('vm.resize', `Nova did not resize server ${s.id} to flavor ${view.name}; its instance actions (openstack server event list) say why`);
  }
  await serverAction(ctx, s.id, { confirmResize: null });
  return waitForServer(ctx, s.id, 'the resize confirmation', isSettled);
}

/**
 * Rebuilds from the declared image. Returns false when the server already
 * runs it and only the image record was missing (an adopted server).
 */
async function rebuildImage(ctx: AdapterContext, id: string, spec: VirtualMachineSpec): Promise<boolean> {
  const name = spec.imageRef?.name;
  if (!name) return false;
  const imageId = ctx.idOf('Image', name);
  let s = await showServer(ctx, id);
  if (!s) throw new KupenstackError('vm.gone', `server ${id} disappeared before its rebuild`);
  if (imageIdOf(s) === imageId) {
    await ctx.apis.compute.post(`/servers/${id}/metadata`, { metadata: { [metaImage]: name } });
    return false;
  }
  s = await wakeUp(ctx, s);
  // Rebuild replaces the whole metadata: the record of the new image lands with the rebuild itself.
  const body: Record<string, unknown> = { imageRef: imageId, metadata: { ...s.metadata, [metaImage]: name } };
  const data = await userData(spec, ctx);
  if (data !== undefined) body.user_data = data;
  await serverAction(ctx, id, { rebuild: body });
  return true;
}

/** One or two actions: paused or suspended servers only go back to ACTIVE, and only ACTIVE ones pause or suspend. */
async function setPower(ctx: AdapterContext, current: NovaServer, want: PowerState): Promise<void> {
  let s = current;
  for (let step = 0; step < 2; step++) {
    const action = powerAction(s.status, want);
    if (!action) return;
    await serverAction(ctx, s.id, action);
    const toActive = 'unpause' in action || 'resume' in action || 'os-start' in action;
    if (!toActive || want === 'running') return;
    s = await waitForServer(ctx, s.id, 'the server to be ACTIVE', isSettled);
  }
}

async function updateMetadata(ctx: AdapterContext, id: string, have: Record<string, string>, want: Record<string, string>): Promise<void> {
  const set = Object.fromEntries(Object.entries(want).filter(([k, v]) => have[k] !== v));
  // POST merges into the existing metadata, so the marker keys stay.
  if (Object.keys(set).length > 0) await ctx.apis.compute.post(`/servers/${id}/metadata`, { metadata: set });
  for (const key of Object.keys(have)) if (!(key in want)) await ctx.apis.compute.remove(`/servers/${id}/metadata/${encodeURIComponent(key)}`);
}

async function updateVolumes(ctx: AdapterContext, id: string, have: string[], spec: VirtualMachineSpec): Promise<void> {
  const want = (spec.volumes ?? []).map((v) => ({ id: ctx.idOf('Volume', v.volumeRef.name), device: v.device }));
  // Declared order: attaching in it gives the device names the manifest expects.
  for (const v of want) {
    if (!have.includes(v.id)) await ctx.apis.compute.post(`/servers/${id}/os-volume_attachments`, { volumeAttachment: { volumeId: v.id, ...(v.device ? { device: v.device } : {}) } });
  }
  for (const volumeId of have) if (!want.some((w) => w.id === volumeId)) await ctx.apis.compute.remove(`/servers/${id}/os-volume_attachments/${volumeId}`);
}

/** The groups of the ports Nova made from networkRef entries; Port manifests keep their own. */
async function updatePortGroups(ctx: AdapterContext, id: string, want: string[]): Promise<void> {
  const ports = await ctx.apis.network.list<NeutronPort>('/ports', 'ports', { device_id: id });
  for (const p of ports) {
    if (isPortManifest(p) || uniqSorted(p.security_groups ?? []).join() === want.join()) continue;
    await ctx.apis.network.put(`/ports/${p.id}`, { port: { security_groups: want } });
  }
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export const virtualMachine: KindAdapter = {
  impact: {
    onDelete: { code: 'root-disk-lost', message: 'the server and its root disk are deleted' },
    fields: {
      image: { code: 'root-disk-lost', note: 'rebuild: the root disk starts again from the new image' },
      image_id: { code: 'root-disk-lost', note: 'rebuild: the root disk starts again from the new image version' },
      flavor: { note: 'resize: the server restarts on the new flavor, its disk is kept' },
      power_state: { note: 'the power state is set back to the declared one', heal: 'reboot' },
    },
  },
  kind: 'VirtualMachine',
  service: 'compute',
  fields: {
    name: 'update',
    description: 'update',
    metadata: 'update',
    tags: 'update',
    power_state: 'update',
    flavor: 'update',
    image: 'update',
    image_id: 'update',
    volumes: 'update',
    security_groups: 'update',
    networks: 'replace',
    fixed_ips: 'replace',
    key_name: 'replace',
    user_data: 'replace',
    availability_zone: 'replace',
    config_drive: 'replace',
    boot_volume: 'replace',
  },

  async observe(ctx) {
    const servers = await ctx.apis.compute.list<NovaServer>('/servers/detail', 'servers', { tags: ownerTag(ctx.owner), project_id: ctx.projectId });
    // The tag alone is not proof: anyone may set it. The metadata marker says which manifest.
    return withPorts(
      ctx,
      servers.filter((s) => markerFromMetadata(s.metadata)?.owner === ctx.owner),
    );
  },

  async observeCloud(ctx) {
    const servers = new Map<string, { projectId: string; server: NovaServer }>();
    for await (const page of ctx.apis.compute.pages<NovaServer & { tenant_id?: string }>('/servers/detail', 'servers', { all_tenants: 1, tags: ownerTag(ctx.owner), limit: cloudPageSize })) {
      for (const s of page) if (s.tenant_id && ctx.projects.has(s.tenant_id) && markerFromMetadata(s.metadata)?.owner === ctx.owner) servers.set(s.id, { projectId: s.tenant_id, server: s });
    }
    const out = new Map<string, Remote[]>();
    if (servers.size === 0) return out;
    // The NICs: only these servers' ports (filtered by device_id), not every port of the cloud.
    const ports = new Map<string, NeutronPort[]>([...servers.keys()].map((id) => [id, []]));
    await neutronListByIds<NeutronPort>(ctx.apis.network, 'ports', 'device_id', [...servers.keys()], (p) => ports.get(p.device_id)?.push(p));
    for (const [id, { projectId, server }] of servers) bucket(out, projectId, toRemote(server, ports.get(id)!));
    return out;
  },

  async desired(m, ctx) {
    const spec = specOf(m);
    const out: Record<string, unknown> = {
      name: openstackName(m),
      flavor: (await resolveFlavor(ctx, spec)).view,
      power_state: spec.powerState ?? 'running',
      networks: desiredNics(ctx, spec).nics,
    };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.metadata) out.metadata = sortedRecord(spec.metadata);
    if (spec.tags) out.tags = uniqSorted(spec.tags);
    if (spec.imageRef) {
      out.image = spec.imageRef.name;
      // A new Glance image behind the same Image manifest rebuilds only when asked to.
      if (spec.onImageUpdate === 'rebuild') out.image_id = ctx.idOf('Image', spec.imageRef.name);
    }
    const bootVolume = bootVolumeOf(ctx, spec);
    if (bootVolume) out.boot_volume = bootVolume;
    if (spec.networks?.some((n) => n.fixedIP)) out.fixed_ips = spec.networks.map((n) => n.fixedIP ?? null);
    if (spec.securityGroupRefs && spec.networks?.some((n) => n.networkRef)) out.security_groups = uniqSorted(spec.securityGroupRefs.map((r) => ctx.idOf('SecurityGroup', r.name)));
    if (spec.keyPairRef) out.key_name = ctx.idOf('KeyPair', spec.keyPairRef.name);
    const data = await userData(spec, ctx);
    if (data !== undefined) out.user_data = digest(data);
    if (spec.availabilityZone !== undefined) out.availability_zone = spec.availabilityZone;
    if (spec.configDrive !== undefined) out.config_drive = spec.configDrive;
    if (spec.volumes) out.volumes = uniqSorted(spec.volumes.map((v) => ctx.idOf('Volume', v.volumeRef.name)));
    return out;
  },

  async create(ctx, m, desired, marker) {
    const spec = specOf(m);
    const nics = desiredNics(ctx, spec).body;
    const server: Record<string, unknown> = {
      name: desired.name,
      flavorRef: (await resolveFlavor(ctx, spec)).id,
      // Since 2.37 the NIC list is mandatory; "none" is how to ask for no NIC.
      networks: nics.length > 0 ? nics : 'none',
      metadata: { ...spec.metadata, ...(spec.imageRef ? { [metaImage]: spec.imageRef.name } : {}), ...markerMetadata(marker) },
      tags: [...uniqSorted(spec.tags ?? []), ownerTag(marker.owner)],
    };
    if (spec.imageRef) server.imageRef = ctx.idOf('Image', spec.imageRef.name);
    const bdm = bootVolumeBody(ctx, spec);
    if (bdm) server.block_device_mapping_v2 = [bdm];
    // Ids, not names: Neutron group names are not unique in a project.
    if (Array.isArray(desired.security_groups)) server.security_groups = strings(desired.security_groups).map((id) => ({ name: id }));
    if (spec.keyPairRef) server.key_name = ctx.idOf('KeyPair', spec.keyPairRef.name);
    const data = await userData(spec, ctx);
    if (data !== undefined) server.user_data = data;
    if (spec.availabilityZone !== undefined) server.availability_zone = spec.availabilityZone;
    if (spec.configDrive !== undefined) server.config_drive = spec.configDrive;
    if (spec.description !== undefined) server.description = spec.description;
    const res = await ctx.apis.compute.post<{ server: { id: string } }>('/servers', { server }, [202]);
    // Nothing after the POST: power state and volume attachments are updates once the server is up.
    return { id: res.server.id, name: String(desired.name), status: 'BUILD', marker, fields: { ...desired }, raw: { id: res.server.id } };
  },

  async update(ctx, remote, changes, m) {
    const spec = specOf(m);
    const id = remote.id;
    const attrs = Object.fromEntries(Object.entries(changes).filter(([k]) => k === 'name' || k === 'description'));
    if (Object.keys(attrs).length > 0) await ctx.apis.compute.put(`/servers/${id}`, { server: attrs });
    if ('metadata' in changes) await updateMetadata(ctx, id, record(remote.fields.metadata), record(changes.metadata));
    if ('tags' in changes) {
      // One PUT replaces the set: keep the owner tags with the user's.
      const owners = strings(remote.raw.tags).filter((t) => t.startsWith(ownerTagPrefix));
      await ctx.apis.compute.put(`/servers/${id}/tags`, { tags: uniqSorted([...strings(changes.tags), ...owners, ownerTag(ctx.owner)]) });
    }
    if ('security_groups' in changes) await updatePortGroups(ctx, id, uniqSorted(strings(changes.security_groups)));
    if ('volumes' in changes) await updateVolumes(ctx, id, strings(remote.fields.volumes), spec);
    // State-changing steps last, each waiting for Nova where the next one needs it.
    let current = remote.raw as unknown as NovaServer;
    if ('flavor' in changes) current = await resize(ctx, current, spec);
    // A rebuild runs on after this returns; the power state follows on the next step.
    if (('image' in changes || 'image_id' in changes) && (await rebuildImage(ctx, id, spec))) return;
    if ('power_state' in changes && typeof changes.power_state === 'string') await setPower(ctx, current, changes.power_state as PowerState);
  },

  async delete(ctx, remote) {
    await ctx.apis.compute.remove(`/servers/${remote.id}`);
  },

  async get(ctx, id) {
    const s = await showServer(ctx, id);
    if (!s) return undefined;
    // While building the NICs are still being made: no port lookup on every poll.
    const ports = s.status === 'BUILD' ? [] : await ctx.apis.network.list<NeutronPort>('/ports', 'ports', { device_id: id });
    return toRemote(s, ports);
  },

  async find(ctx, filter) {
    // Nova's name filter is a regular expression.
    const servers = await ctx.apis.compute.list<NovaServer>('/servers/detail', 'servers', {
      project_id: ctx.projectId,
      name: filter.name === undefined ? undefined : `^${escapeRegex(filter.name)}$`,
      tags: filter.tags && filter.tags.length > 0 ? filter.tags : undefined,
    });
    return withPorts(
      ctx,
      servers.filter((s) => filter.description === undefined || (s.description ?? '') === filter.description),
    );
  },

  report: (remote) => serverReport(remote.raw as unknown as NovaServer),

  health: (remote) => (remote.raw.status === undefined ? { state: 'progressing', reason: 'just created' } : serverHealth(remote.raw as unknown as NovaServer)),

  async heal(ctx, remote, step, m) {
    const s = await showServer(ctx, remote.id);
    if (!s) throw new KupenstackError('vm.gone', `server ${remote.id} no longer exists: it needs to be recreated`);
    // States with their own way back, whatever the step.
    if (s.status === 'VERIFY_RESIZE') return serverAction(ctx, s.id, { confirmResize: null });
    if (s.status === 'SHELVED' || s.status === 'SHELVED_OFFLOADED') return serverAction(ctx, s.id, { unshelve: null });
    if (s.status === 'RESCUE') return serverAction(ctx, s.id, { unrescue: null });
    if (s.status === 'ERROR') await resetToActive(ctx, s.id);
    const imageId = imageIdOf(s);
    if (step === 'rebuild' && imageId) {
      const body: Record<string, unknown> = { imageRef: imageId };
      const data = await userData(specOf(m), ctx);
      if (data !== undefined) body.user_data = data;
      return serverAction(ctx, s.id, { rebuild: body });
    }
    // A volume-backed server cannot re-image its root volume at compute 2.90:
    // its "rebuild" is the hard reboot, which respawns the guest all the same.
    return serverAction(ctx, s.id, { reboot: { type: 'HARD' } });
  },
};
