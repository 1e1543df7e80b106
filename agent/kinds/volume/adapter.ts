import { KupenstackError } from '../../errors.ts';
import { markerMetadata } from '../../ownership/marker.ts';
import { cinderRemote, deleteCinder, findCinder, observeCinder, observeCinderCloud } from '../kit/cinder.ts';
import { lookAgain } from '../kit/look-again.ts';
import { openstackName, pick, refName, type AdapterContext, type Health, type KindAdapter, type Remote } from '../kit/adapter.ts';
import type { Looked } from '../../../lib/progress.ts';
import { byProjectField } from '../kit/ownership.ts';

/**
 * Cinder volumes. The marker is volume metadata, written by the create call;
 * observe is one list filtered by that metadata. Cinder takes no client id,
 * so a create retried after a crash relies on the engine observing first.
 *
 * A volume holds data: it grows in place (`os-extend`), changes type in place
 * (`os-retype`, as the schema promises) and is never replaced to shrink —
 * a smaller size is refused.
 */

type RawVolume = Record<string, unknown>;
const cinder = { collection: 'volumes', key: 'volume', projectAttr: 'os-vol-tenant-attr:tenant_id' };

/** In-use volumes can be extended from 3.42 on. */
const extendVersion = { 'openstack-api-version': 'volume 3.42' };
const settleTimeoutMs = 5 * 60_000;

function toRemote(raw: RawVolume): Remote {
  const imageMeta = raw.volume_image_metadata as { image_id?: string } | undefined;
  return cinderRemote(raw, {
    size: raw.size,
    volume_type: raw.volume_type,
    availability_zone: raw.availability_zone,
    imageRef: imageMeta?.image_id ?? null,
    snapshot_id: raw.snapshot_id ?? null,
    multiattach: raw.multiattach,
  });
}

export const volume: KindAdapter = {
  impact: { onDelete: { code: 'data-volume-deleted', message: 'the volume and its data are deleted' } },
  kind: 'Volume',
  ownership: byProjectField(['os-vol-tenant-attr:tenant_id'], "a volume: its os-vol-tenant-attr:tenant_id is the namespace's project"),
  service: 'volume',
  fields: {
    name: 'update',
    description: 'update',
    size: 'update',
    volume_type: 'update',
    availability_zone: 'replace',
    imageRef: 'replace',
    snapshot_id: 'replace',
    multiattach: 'replace',
    metadata: 'update',
  },

  report: (remote) => ({
    ...(remote.status ? { volumeStatus: remote.status } : {}),
    ...(typeof remote.raw.bootable === 'string' || typeof remote.raw.bootable === 'boolean'
      ? { bootable: String(remote.raw.bootable).toLowerCase() === 'true' }
      : {}),
    attachments: Array.isArray(remote.raw.attachments)
      ? (remote.raw.attachments as { server_id?: string; device?: string }[]).map((a) => ({
          ...(a.server_id ? { serverID: a.server_id } : {}),
          ...(a.device ? { device: a.device } : {}),
        }))
      : [],
  }),

  observe: (ctx) => observeCinder(ctx, cinder, toRemote),

  observeCloud: (ctx) => observeCinderCloud(ctx, cinder, toRemote),

  desired(m, ctx) {
    const spec = m.spec;
    const out: Record<string, unknown> = {
      name: openstackName(m),
      ...pick(spec, {
        description: 'description',
        size: 'size',
        volumeType: 'volume_type',
        availabilityZone: 'availability_zone',
        multiattach: 'multiattach',
        metadata: 'metadata',
      }),
    };
    const image = refName(spec.imageRef);
    if (image) out.imageRef = ctx.idOf('Image', image);
    const snapshot = refName((spec.source as { snapshotRef?: unknown } | undefined)?.snapshotRef);
    // Cinder copies the snapshot into the new volume at create: snapshot_id goes in the create body as it is.
    if (snapshot) out.snapshot_id = ctx.idOf('VolumeSnapshot', snapshot);
    return out;
  },

  async create(ctx, _m, desired, marker) {
    const { metadata, ...rest } = desired;
    const body = { volume: { ...rest, metadata: { ...((metadata ?? {}) as Record<string, string>), ...markerMetadata(marker) } } };
    const res = await ctx.apis.volume.post<{ volume: RawVolume }>('/volumes', body, [202]);
    return toRemote(res.volume);
  },

  async update(ctx, remote, changes) {
    const have = Number(remote.fields.size);
    if ('size' in changes && Number(changes.size) < have) {
      throw new KupenstackError(
        'volume.shrink',
        `spec.size ${String(changes.size)} GiB is smaller than the volume's ${have} GiB: Cinder cannot shrink a volume, and replacing it would lose its data. Set size back to ${have} or more`,
      );
    }
    const volumes = ctx.apis.volume;
    const renamed = pick(changes, { name: 'name', description: 'description' });
    if (Object.keys(renamed).length > 0) await volumes.put(`/volumes/${remote.id}`, { volume: renamed });
    if ('metadata' in changes) {
      // PUT replaces every key: the marker is written back with the user's keys.
      const marker = remote.marker ? markerMetadata(remote.marker) : {};
      await volumes.put(`/volumes/${remote.id}/metadata`, { metadata: { ...((changes.metadata ?? {}) as Record<string, string>), ...marker } });
    }
    if ('size' in changes) {
      await volumes.call('POST', `/volumes/${remote.id}/action`, {
        json: { 'os-extend': { new_size: changes.size } },
        headers: extendVersion,
        signal: ctx.signal,
      });
    }
    if ('volume_type' in changes) {
      // One action at a time: Cinder refuses a retype while the volume is extending.
      if ('size' in changes) {
        const settled = await settle(ctx, remote.id);
        // Requeue mode: still extending; a later run retypes it.
        if ('waiting' in settled) return settled;
      }
      await volumes.post(`/volumes/${remote.id}/action`, { 'os-retype': { new_type: changes.volume_type, migration_policy: 'on-demand' } });
    }
  },

  async delete(ctx, remote) {
    await deleteCinder(ctx, cinder, remote.id);
  },

  async remark(ctx, remote, marker) {
    // POST merges: the user's keys stay as they are, the marker's are added (or rewritten).
    await ctx.apis.volume.post(`/volumes/${remote.id}/metadata`, { metadata: markerMetadata(marker) });
  },

  async get(ctx, id) {
    const res = await ctx.apis.volume.find<{ volume: RawVolume }>(`/volumes/${encodeURIComponent(id)}`);
    return res ? toRemote(res.volume) : undefined;
  },

  find: (ctx, filter) => findCinder(ctx, cinder, filter, toRemote),

  health(remote): Health {
    const status = String(remote.status);
    if (status === 'available' || status === 'in-use') return { state: 'ready' };
    if (status.startsWith('error')) return { state: 'failed', reason: `Cinder status ${status}` };
    return { state: 'progressing', reason: `Cinder status ${status}` };
  },
};

/** Until the volume leaves a transitional status (extending), within a bound; one look in requeue mode, which may answer waiting. */
function settle(ctx: AdapterContext, id: string): Promise<Looked<true>> {
  return lookAgain<true>(ctx, {
    what: `volume ${id} extends before its retype`,
    timeoutMs: settleTimeoutMs,
    look: async () => {
      const res = await ctx.apis.volume.get<{ volume: RawVolume }>(`/volumes/${id}`);
      return res.volume.status !== 'extending' ? { done: true } : { why: 'Cinder status extending' };
    },
    onTimeout: () =>
      new KupenstackError('volume.busy', `volume ${id} is still extending after ${settleTimeoutMs / 1000} s; the retype is left for the next run`),
  });
}
