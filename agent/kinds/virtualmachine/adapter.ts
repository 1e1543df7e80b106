import { KupenstackError } from '../../errors.ts';
import { markerFromMetadata, markerMetadata, ownerTag, ownerTagPrefix } from '../../ownership/marker.ts';
import { bucket, openstackName, type KindAdapter, type Remote } from '../kit/adapter.ts';
import { cloudPageSize, neutronListByIds } from '../kit/neutron.ts';
import { resetToActive, serverAction, serverHealth, showServer, type NovaServer, type PowerState } from '../kit/nova-server.ts';
import { rebuildImage, resize, setPower, updateMetadata, updatePortGroups, updateVolumes } from './actions.ts';
import { resolveFlavor } from './flavor.ts';
import { imageIdOf, serverReport, toRemote, withPorts } from './remote.ts';
import { bootVolumeBody, bootVolumeOf, desiredNics, digest, userData } from './request.ts';
import { type NeutronPort, metaImage, record, sortedRecord, specOf, strings, uniqSorted } from './shapes.ts';
import { byProjectField } from '../kit/ownership.ts';

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
export const vmUnobservedFields: readonly string[] = ['user_data', 'fixed_ips', 'boot_volume', 'server_group'];

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
  ownership: byProjectField(['tenant_id', 'project_id'], "a server: its tenant_id is the namespace's project"),
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
    // A server joins a group only at creation (Nova shows the group in a server's GET, not in the list).
    server_group: 'replace',
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
    for await (const page of ctx.apis.compute.pages<NovaServer & { tenant_id?: string }>('/servers/detail', 'servers', {
      all_tenants: 1,
      tags: ownerTag(ctx.owner),
      limit: cloudPageSize,
    })) {
      for (const s of page)
        if (s.tenant_id && ctx.projects.has(s.tenant_id) && markerFromMetadata(s.metadata)?.owner === ctx.owner)
          servers.set(s.id, { projectId: s.tenant_id, server: s });
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
    if (spec.securityGroupRefs && spec.networks?.some((n) => n.networkRef))
      out.security_groups = uniqSorted(spec.securityGroupRefs.map((r) => ctx.idOf('SecurityGroup', r.name)));
    if (spec.keyPairRef) out.key_name = ctx.idOf('KeyPair', spec.keyPairRef.name);
    if (spec.serverGroupRef) out.server_group = ctx.idOf('ServerGroup', spec.serverGroupRef.name);
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
    // The group is a scheduler hint, beside `server` in the body.
    const hints = spec.serverGroupRef ? { 'os:scheduler_hints': { group: ctx.idOf('ServerGroup', spec.serverGroupRef.name) } } : {};
    const res = await ctx.apis.compute.post<{ server: { id: string } }>('/servers', { server, ...hints }, [202]);
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
    if ('flavor' in changes) {
      const resized = await resize(ctx, current, spec);
      // Requeue mode: Nova is still at it; a later run goes on from what it shows then.
      if ('waiting' in resized) return resized;
      current = resized.done;
    }
    // A rebuild runs on after this returns; the power state follows on the next step.
    if ('image' in changes || 'image_id' in changes) {
      const rebuilt = await rebuildImage(ctx, id, spec);
      if ('waiting' in rebuilt) return rebuilt;
      if (rebuilt.done) return;
    }
    if ('power_state' in changes && typeof changes.power_state === 'string') return setPower(ctx, current, changes.power_state as PowerState);
  },

  async delete(ctx, remote) {
    await ctx.apis.compute.remove(`/servers/${remote.id}`);
  },

  /**
   * Two writes, both idempotent: the owner tag (what observe lists by) and the
   * metadata marker, with the image's manifest name that `image` is read from
   * (an adopted server did not have it, and without it the plan would rebuild).
   */
  async remark(ctx, remote, marker, m) {
    const spec = specOf(m);
    if (!strings(remote.raw.tags).includes(ownerTag(marker.owner)))
      await ctx.apis.compute.call('PUT', `/servers/${remote.id}/tags/${encodeURIComponent(ownerTag(marker.owner))}`, { ok: [201, 204], signal: ctx.signal });
    await ctx.apis.compute.post(`/servers/${remote.id}/metadata`, {
      metadata: { ...markerMetadata(marker), ...(spec.imageRef ? { [metaImage]: spec.imageRef.name } : {}) },
    });
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
