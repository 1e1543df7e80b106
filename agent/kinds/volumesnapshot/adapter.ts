import { markerMetadata } from '../../ownership/marker.ts';
import { cinderRemote, deleteCinder, findCinder, observeCinder, observeCinderCloud } from '../kit/cinder.ts';
import { openstackName, pick, refName, type Health, type KindAdapter, type Remote } from '../kit/adapter.ts';
import { byProjectField } from '../kit/ownership.ts';

/**
 * Cinder snapshots. As for volumes, the marker is metadata written by the
 * create call and observe is one list filtered by it. The volume is the only
 * immutable field: a snapshot of another volume is a new snapshot. Cinder
 * refuses to delete a volume that still has snapshots, so snapshots are
 * pruned first (Volume's `source.snapshotRef` does not order the kinds).
 */

type RawSnapshot = Record<string, unknown>;
const cinder = { collection: 'snapshots', key: 'snapshot', projectAttr: 'os-extended-snapshot-attributes:project_id' };

const toRemote = (raw: RawSnapshot): Remote => cinderRemote(raw, { volume_id: raw.volume_id });

export const volumeSnapshot: KindAdapter = {
  impact: { onDelete: { code: 'data-volume-deleted', message: 'the snapshot and the data it kept are deleted' } },
  kind: 'VolumeSnapshot',
  ownership: byProjectField(
    ['os-extended-snapshot-attributes:project_id'],
    "a volume snapshot: its os-extended-snapshot-attributes:project_id is the namespace's project",
  ),
  service: 'volume',
  fields: { name: 'update', description: 'update', volume_id: 'replace', metadata: 'update' },

  report: (remote) => ({
    ...(remote.status ? { snapshotStatus: remote.status } : {}),
    ...(typeof remote.raw.size === 'number' ? { size: remote.raw.size } : {}),
    ...(typeof remote.raw.volume_id === 'string' ? { volumeID: remote.raw.volume_id } : {}),
  }),

  observe: (ctx) => observeCinder(ctx, cinder, toRemote),

  observeCloud: (ctx) => observeCinderCloud(ctx, cinder, toRemote),

  desired(m, ctx) {
    const out: Record<string, unknown> = { name: openstackName(m), ...pick(m.spec, { description: 'description', metadata: 'metadata' }) };
    const volume = refName(m.spec.volumeRef);
    if (volume) out.volume_id = ctx.idOf('Volume', volume);
    return out;
  },

  async create(ctx, m, desired, marker) {
    const { metadata, ...rest } = desired;
    const body = {
      snapshot: { ...rest, force: m.spec.force === true, metadata: { ...((metadata ?? {}) as Record<string, string>), ...markerMetadata(marker) } },
    };
    const res = await ctx.apis.volume.post<{ snapshot: RawSnapshot }>('/snapshots', body, [202]);
    return toRemote(res.snapshot);
  },

  async update(ctx, remote, changes) {
    const renamed = pick(changes, { name: 'name', description: 'description' });
    if (Object.keys(renamed).length > 0) await ctx.apis.volume.put(`/snapshots/${remote.id}`, { snapshot: renamed });
    if ('metadata' in changes) {
      // PUT replaces every key: the marker is written back with the user's keys.
      const marker = remote.marker ? markerMetadata(remote.marker) : {};
      await ctx.apis.volume.put(`/snapshots/${remote.id}/metadata`, { metadata: { ...((changes.metadata ?? {}) as Record<string, string>), ...marker } });
    }
  },

  async delete(ctx, remote) {
    await deleteCinder(ctx, cinder, remote.id);
  },

  async get(ctx, id) {
    const res = await ctx.apis.volume.find<{ snapshot: RawSnapshot }>(`/snapshots/${encodeURIComponent(id)}`);
    return res ? toRemote(res.snapshot) : undefined;
  },

  find: (ctx, filter) => findCinder(ctx, cinder, filter, toRemote),

  health(remote): Health {
    const status = String(remote.status);
    if (status === 'available') return { state: 'ready' };
    if (status.startsWith('error')) return { state: 'failed', reason: `Cinder status ${status}` };
    return { state: 'progressing', reason: `Cinder status ${status}` };
  },
};
