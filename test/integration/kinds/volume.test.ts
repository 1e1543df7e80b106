import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import type { AdapterContext, Remote } from '../../../agent/kinds/kit/adapter.ts';
import { volume } from '../../../agent/kinds/volume/adapter.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
let other: TestProject;
let imageId: string;
let typeId: string;
const typeName = `kst-test-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  [t, other] = await Promise.all([testProject('volume'), testProject('volume-b')]);
  // An active image to fill a volume from, and a second volume type on the same backend to retype to.
  const img = await t.ctx.apis.image.post<{ id: string }>('/images', { name: 'base', disk_format: 'raw', container_format: 'bare', visibility: 'private' });
  await t.ctx.apis.image.call('PUT', `/images/${img.id}/file`, { body: Buffer.alloc(1024 * 1024, 1), headers: { 'content-type': 'application/octet-stream' } });
  imageId = img.id;
  t.ids.set('Image/base', imageId);
  typeId = (await t.cloud.client('volumev3').post<{ volume_type: { id: string } }>('/types', { volume_type: { name: typeName, extra_specs: { volume_backend_name: 'fake' } } })).volume_type.id;
});
afterAll(async () => {
  await t.ctx.apis.image.remove(`/images/${imageId}`);
  await t.cloud.client('volumev3').remove(`/types/${typeId}`);
  await Promise.all([t.dispose(), other.dispose()]);
});

/** Polls until Cinder leaves the transitional statuses, as the engine's readiness wait does. */
async function settled(ctx: AdapterContext, id: string): Promise<Remote> {
  for (let i = 0; i < 120; i++) {
    const r = await volume.get!(ctx, id);
    if (!r) throw new Error(`volume ${id} is gone`);
    if (volume.health!(r).state !== 'progressing') return r;
    await sleep(500);
  }
  throw new Error(`volume ${id} did not settle`);
}

async function gone(ctx: AdapterContext, id: string): Promise<void> {
  for (let i = 0; i < 120 && (await volume.get!(ctx, id)); i++) await sleep(500);
}

describe('the Volume adapter', () => {
  it('creates a marked volume from an image, observes only its own, updates, retypes and grows in place, never shrinks', async () => {
    const { ctx } = t;
    const m = manifest('Volume', 'data', ctx.namespace, { size: 2, description: 'db files', metadata: { tier: 'db' }, imageRef: { name: 'base' } });
    const desired = await volume.desired(m, ctx);
    expect(desired).toEqual({ name: 'data', size: 2, description: 'db files', metadata: { tier: 'db' }, imageRef: imageId });
    const marker = { owner: ctx.owner, ref: 'Volume/data', specHash: replaceHash(volume, desired) };

    // Never ours: an unmarked volume with the same name, another owner's volume here, this owner's in another project.
    const unmarked = await ctx.apis.volume.post<{ volume: { id: string } }>('/volumes', { volume: { name: 'data', size: 1, metadata: { tier: 'db' } } });
    const otherOwner = await volume.create(ctx, m, { name: 'data', size: 1 }, { ...marker, owner: other.ctx.owner });
    const elsewhere = await volume.create({ ...other.ctx, owner: ctx.owner }, m, { name: 'data', size: 1 }, marker);

    const created = await volume.create(ctx, m, desired, marker);
    try {
      // Cinder takes no client id: what protects a retried create is that observe finds the
      // marked volume at once, still `creating`, so the engine adopts it instead of creating again.
      expect((await volume.observe(ctx)).map((r) => r.id)).toEqual([created.id]);

      let remote = await settled(ctx, created.id);
      expect(remote.status).toBe('available');
      const raw = await ctx.apis.volume.get<{ volume: { metadata: Record<string, string>; volume_image_metadata?: { image_id: string }; bootable: string; 'os-vol-tenant-attr:tenant_id': string } }>(`/volumes/${created.id}`);
      expect(raw.volume.metadata).toEqual({ tier: 'db', kupenstack_owner: ctx.owner, kupenstack_ref: 'Volume/data', kupenstack_spec: marker.specHash });
      expect(raw.volume.volume_image_metadata?.image_id).toBe(imageId);
      expect(raw.volume.bootable).toBe('true');
      expect(raw.volume['os-vol-tenant-attr:tenant_id']).toBe(ctx.projectId);

      let observed = await volume.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);

      // No drift: a second apply writes nothing.
      const writes = ctx.cloud.counters.write;
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(difference(volume, desired, observed[0]!)).toMatchObject({ updates: {}, replace: false });
      expect(ctx.cloud.counters.write).toBe(writes);

      // Another image is a changed manifest (replace); a smaller size is refused, never a replace.
      expect(difference(volume, { ...desired, imageRef: 'another-image' }, observed[0]!).replace).toBe(true);
      const shrink = await volume.update(ctx, observed[0]!, { size: 1, name: 'renamed' }, m).catch((e: unknown) => e);
      expect(shrink).toMatchObject({ code: 'volume.shrink' });
      expect((await volume.get!(ctx, created.id))?.fields).toMatchObject({ size: 2, name: 'data' });

      // In place: name, description, metadata (the marker survives), then a retype.
      await volume.update(ctx, observed[0]!, { name: 'data2', description: 'logs', metadata: { tier: 'logs', rack: 'r1' } }, m);
      observed = await volume.observe(ctx);
      expect(observed[0]!.fields).toMatchObject({ name: 'data2', description: 'logs', metadata: { tier: 'logs', rack: 'r1' } });
      expect(observed[0]!.marker).toEqual(marker);
      await volume.update(ctx, observed[0]!, { volume_type: typeName }, m);
      remote = await settled(ctx, created.id);
      expect(remote.fields.volume_type).toBe(typeName);
      expect(remote.status).toBe('available');

      // Growing is an os-extend: Cinder grows the volume and it is available again at the new size.
      await volume.update(ctx, remote, { size: 3 }, m);
      remote = await settled(ctx, created.id);
      expect({ status: remote.status, size: remote.fields.size }).toEqual({ status: 'available', size: 3 });
      expect(volume.health!(remote)).toEqual({ state: 'ready' });
    } finally {
      await volume.delete(ctx, created);
      await volume.delete(ctx, created);
      await ctx.apis.volume.remove(`/volumes/${unmarked.volume.id}`);
      await volume.delete(ctx, otherOwner);
      await volume.delete(other.ctx, elsewhere);
      await Promise.all([gone(ctx, created.id), gone(ctx, unmarked.volume.id), gone(ctx, otherOwner.id), gone(other.ctx, elsewhere.id)]);
    }
    expect(await volume.observe(ctx)).toEqual([]);
    expect(await volume.get!(ctx, created.id)).toBeUndefined();
  });
});
