import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import type { Remote } from '../../../agent/kinds/kit/adapter.ts';
import { putImageData } from '../../../agent/glance/image-api.ts';
import { image } from '../../../agent/kinds/image/adapter.ts';
import { HoldBackSha256, imageId } from '../../../agent/kinds/image/url.ts';
import type { Manifest } from '../../../agent/model/manifest.ts';
import type { OpenStackError } from '../../../agent/openstack/errors.ts';
import { ownerTag } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
let other: TestProject;
let server: Server;
let base: string;
const dir = mkdtempSync(join(tmpdir(), 'ks-image-'));
const files = new Map<string, Buffer>();

/** 16 MiB of raw disk, served in 1 MiB writes so the upload sees many chunks. */
const rawDisk = Buffer.alloc(16 * 1024 * 1024);
for (let i = 0; i < rawDisk.length; i += 64) rawDisk.write(`kupenstack raw test disk, block ${i / 64}`.padEnd(64, '.'), i);
const bigDisk = 512 * 1024 * 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  [t, other] = await Promise.all([testProject('image'), testProject('image-b')]);
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', join(dir, 'plain.qcow2'), '64M']);
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', '/etc/hostname', '-F', 'raw', join(dir, 'backed.qcow2')]);
  files.set('/disk.raw', rawDisk);
  files.set('/plain.qcow2', readFileSync(join(dir, 'plain.qcow2')));
  files.set('/backed.qcow2', readFileSync(join(dir, 'backed.qcow2')));
  // The test bed serves no files: a real HTTP peer on loopback.
  server = createServer((req, res) => {
    if (req.url === '/big.raw') {
      // Made while it is sent: the test process never holds the whole disk.
      const block = Buffer.alloc(1024 * 1024, 0x5a);
      res.writeHead(200, { 'content-length': bigDisk });
      return void Readable.from((function* () {
        for (let i = 0; i < bigDisk; i += block.length) yield block;
      })()).pipe(res);
    }
    const body = files.get(req.url ?? '');
    if (!body) return void res.writeHead(404).end('not here');
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    Readable.from((function* () {
      for (let i = 0; i < body.length; i += 1024 * 1024) yield body.subarray(i, i + 1024 * 1024);
    })()).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  // undici keeps finished downloads' connections alive for reuse.
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
  await Promise.all([t.dispose(), other.dispose()]);
});

interface RawImage extends Record<string, unknown> {
  id: string;
  status: string;
  owner: string;
  size: number | null;
  tags: string[];
}

/** What the engine does after create(): apply what the create left for later. */
async function followUp(m: Manifest, desired: Record<string, unknown>, remote: Remote): Promise<void> {
  const diff = difference(image, desired, remote);
  expect(diff.replace).toBe(false);
  await image.update(t.ctx, remote, diff.updates, m);
}

describe('the Image adapter', () => {
  it('creates a marked private image, streams the URL into it, observes only its own and updates in place', async () => {
    const { ctx } = t;
    const url = `${base}/disk.raw`;
    const m = manifest('Image', 'base', ctx.namespace, { source: { url: { url, sha256: sha(rawDisk) } }, minDisk: 1, protected: true, properties: { os_distro: 'cirros', hw_disk_bus: 'virtio' }, tags: ['b', 'a'] });
    const desired = await image.desired(m, ctx);
    expect(desired).toEqual({
      name: 'base',
      min_disk: 1,
      protected: true,
      properties: { os_distro: 'cirros', hw_disk_bus: 'virtio' },
      tags: ['a', 'b'],
      source: { url, sha256: sha(rawDisk) },
      digest: url,
    });
    const marker = { owner: ctx.owner, ref: 'Image/base', specHash: replaceHash(image, desired) };

    // Never ours: an unmarked image of the same name; the same owner's image in another project,
    // even a community one this project can list; another owner's image here.
    const unmarked = await ctx.apis.image.post<RawImage>('/images', { name: 'base', disk_format: 'raw', container_format: 'bare' });
    const elsewhere = await image.create({ ...other.ctx, owner: ctx.owner }, manifest('Image', 'base', other.ctx.namespace, m.spec), { ...desired, visibility: 'community', protected: false }, marker);
    const otherOwner = await image.create(other.ctx, m, { ...desired, protected: false }, { ...marker, owner: other.ctx.owner });

    const created = await image.create(ctx, m, desired, marker);
    try {
      expect(created.id).toBe(imageId(ctx.projectId, m.address, { url, sha256: sha(rawDisk) }, 0));
      expect(created.status).toBe('queued');
      expect(image.health!(created)).toMatchObject({ state: 'progressing' });
      let raw = await ctx.apis.image.get<RawImage>(`/images/${created.id}`);
      expect(raw).toMatchObject({ owner: ctx.projectId, visibility: 'private', container_format: 'bare', protected: true, min_disk: 1, os_distro: 'cirros' });
      expect(raw).toMatchObject({ kupenstack_owner: ctx.owner, kupenstack_ref: 'Image/base', kupenstack_spec: marker.specHash, kupenstack_source: url });
      expect([...raw.tags].sort()).toEqual(['a', 'b', ownerTag(ctx.owner)].sort());

      // The upload is the follow-up update of `digest`; the format comes from the bytes.
      expect(difference(image, desired, created).updates).toEqual({ digest: url });
      await followUp(m, desired, created);
      raw = await ctx.apis.image.get<RawImage>(`/images/${created.id}`);
      expect(raw).toMatchObject({ status: 'active', size: rawDisk.length, disk_format: 'raw' });
      const downloaded = await ctx.apis.image.call('GET', `/images/${created.id}/file`, { headers: { accept: 'application/octet-stream' } });
      expect(downloaded.status).toBe(200);

      let observed = await image.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);
      expect(image.health!(observed[0]!)).toEqual({ state: 'ready' });

      // No drift: a second apply writes nothing.
      const writes = ctx.cloud.counters.write;
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(difference(image, desired, observed[0]!)).toMatchObject({ updates: {}, replace: false });
      expect(ctx.cloud.counters.write).toBe(writes);

      // In place: name, min_ram, properties (one changed, one dropped), tags; the marker survives.
      await image.update(ctx, observed[0]!, { name: 'base-v2', min_ram: 64, properties: { os_distro: 'ubuntu' }, tags: ['c'] }, m);
      raw = await ctx.apis.image.get<RawImage>(`/images/${created.id}`);
      expect(raw).toMatchObject({ name: 'base-v2', min_ram: 64, os_distro: 'ubuntu', kupenstack_owner: ctx.owner });
      expect(raw.hw_disk_bus).toBeUndefined();
      expect([...raw.tags].sort()).toEqual(['c', ownerTag(ctx.owner)].sort());

      // A hidden image is still observed (a plain Glance list leaves it out).
      await ctx.apis.image.call('PATCH', `/images/${created.id}`, { body: Buffer.from(JSON.stringify([{ op: 'replace', path: '/os_hidden', value: true }])), headers: { 'content-type': 'application/openstack-images-v2.1-json-patch' } });
      observed = await image.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);

      // Another URL is another image (replace), never a second upload into this one.
      const moved = await image.desired(manifest('Image', 'base', ctx.namespace, { ...m.spec, source: { url: { url: `${base}/plain.qcow2` } } }), ctx);
      expect(difference(image, moved, observed[0]!).replace).toBe(true);

      // A create retried after a crash conflicts on the derived id: still exactly one image.
      const retried = await image.create(ctx, m, desired, marker).catch((e: unknown) => e);
      expect((retried as OpenStackError).conflict).toBe(true);
      expect((await image.observe(ctx)).map((r) => r.id)).toEqual([created.id]);
    } finally {
      // Protected: delete() lifts the protection first. Twice is fine.
      await image.delete(ctx, created);
      await image.delete(ctx, created);
      await image.delete(other.ctx, elsewhere);
      await image.delete(other.ctx, otherOwner);
      await ctx.apis.image.remove(`/images/${unmarked.id}`);
    }
    expect(await image.observe(ctx)).toEqual([]);
    expect(await image.get!(ctx, created.id)).toBeUndefined();

    // Recreated after a delete (outside Git, or a replacement): Glance keeps deleted ids, the next id in the sequence is used.
    const again = await image.create(ctx, m, { ...desired, protected: false }, marker);
    expect(again.id).toBe(imageId(ctx.projectId, m.address, { url, sha256: sha(rawDisk) }, 1));
    await image.delete(ctx, again);
  });

  it('refuses a download whose sha256 differs: the upload never completes and the image is deleted', async () => {
    const { ctx } = t;
    const m = manifest('Image', 'bad-sum', ctx.namespace, { source: { url: { url: `${base}/disk.raw`, sha256: '0'.repeat(64) } } });
    const desired = await image.desired(m, ctx);
    const created = await image.create(ctx, m, desired, { owner: ctx.owner, ref: 'Image/bad-sum', specHash: replaceHash(image, desired) });
    const err = await image.update(ctx, created, { digest: desired.digest }, m).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'image.checksum' });
    expect(await ctx.apis.image.find(`/images/${created.id}`)).toBeUndefined();
    expect(await image.observe(ctx)).toEqual([]);
  });

  it('holds the last chunk back, so Glance keeps an image whose bytes fail the check queued and empty', async () => {
    const { ctx } = t;
    const raw = await ctx.apis.image.post<RawImage>('/images', { name: 'hold-back', disk_format: 'raw', container_format: 'bare' });
    try {
      const verifier = new HoldBackSha256('f'.repeat(64));
      const chunks = Readable.from((function* () {
        for (let i = 0; i < rawDisk.length; i += 256 * 1024) yield rawDisk.subarray(i, i + 256 * 1024);
      })());
      const put = putImageData(ctx.apis.image, raw.id, pipeline(chunks, verifier, () => undefined), { timeoutMs: 60_000 });
      await expect(put).rejects.toThrow();
      expect(verifier.mismatch?.code).toBe('image.checksum');
      expect(verifier.bytes).toBe(rawDisk.length);
      // Glance notices the cut connection a moment later; the image never becomes active.
      let after = await ctx.apis.image.get<RawImage>(`/images/${raw.id}`);
      for (let i = 0; i < 60 && after.status === 'saving'; i++) {
        await sleep(500);
        after = await ctx.apis.image.get<RawImage>(`/images/${raw.id}`);
      }
      expect(after).toMatchObject({ status: 'queued', size: null });
    } finally {
      await ctx.apis.image.remove(`/images/${raw.id}`);
    }
  });

  it('takes the disk format from the bytes, and refuses a qcow2 with a backing file or a format the bytes contradict', async () => {
    const { ctx } = t;
    const upload = async (name: string, spec: Record<string, unknown>): Promise<{ remote: Remote; err: unknown }> => {
      const m = manifest('Image', name, ctx.namespace, spec);
      const desired = await image.desired(m, ctx);
      const remote = await image.create(ctx, m, desired, { owner: ctx.owner, ref: `Image/${name}`, specHash: replaceHash(image, desired) });
      const err = await image.update(ctx, remote, { digest: desired.digest }, m).catch((e: unknown) => e);
      return { remote, err };
    };
    const plain = await upload('plain', { source: { url: { url: `${base}/plain.qcow2` } } });
    expect(plain.err).toBeUndefined();
    expect(await ctx.apis.image.get<RawImage>(`/images/${plain.remote.id}`)).toMatchObject({ status: 'active', disk_format: 'qcow2', virtual_size: 64 * 1024 * 1024 });
    await image.delete(ctx, plain.remote);

    const backed = await upload('backed', { source: { url: { url: `${base}/backed.qcow2` } } });
    expect(backed.err).toMatchObject({ code: 'image.unsafe' });
    expect(await ctx.apis.image.find(`/images/${backed.remote.id}`)).toBeUndefined();

    const lying = await upload('lying', { diskFormat: 'qcow2', source: { url: { url: `${base}/disk.raw` } } });
    expect(lying.err).toMatchObject({ code: 'image.format-mismatch' });
    expect(await ctx.apis.image.find(`/images/${lying.remote.id}`)).toBeUndefined();

    // A URL that answers 404 leaves the image queued for the next run.
    const missing = await upload('missing', { source: { url: { url: `${base}/nothing.raw` } } });
    expect(missing.err).toMatchObject({ code: 'image.download' });
    expect(await ctx.apis.image.get<RawImage>(`/images/${missing.remote.id}`)).toMatchObject({ status: 'queued' });
    await image.delete(ctx, missing.remote);
    expect(await image.observe(ctx)).toEqual([]);
  });

  it('streams a 512 MiB disk from the URL into Glance in constant memory', async () => {
    const { ctx } = t;
    const m = manifest('Image', 'big', ctx.namespace, { diskFormat: 'raw', source: { url: { url: `${base}/big.raw` } } });
    const desired = await image.desired(m, ctx);
    const created = await image.create(ctx, m, desired, { owner: ctx.owner, ref: 'Image/big', specHash: replaceHash(image, desired) });
    try {
      // The peak starts at the starting figure (never below it), and a run with no sample proves nothing.
      const start = process.memoryUsage().arrayBuffers;
      let peak = start;
      let samples = 0;
      const sample = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().arrayBuffers);
        samples++;
      }, 20);
      try {
        await image.update(ctx, created, { digest: desired.digest }, m);
      } finally {
        clearInterval(sample);
      }
      expect(await ctx.apis.image.get<RawImage>(`/images/${created.id}`)).toMatchObject({ status: 'active', size: bigDisk });
      expect(samples).toBeGreaterThan(0);
      // Buffered, the disk alone would be 512 MiB.
      expect((peak - start) / 2 ** 20).toBeLessThan(160);
    } finally {
      await image.delete(ctx, created);
    }
  });

  it('hands OCI sources to the OCI pipeline, which speaks HTTPS unless `insecure` says otherwise', async () => {
    // The test registry is plain HTTP: without `insecure: true` the TLS handshake fails, nothing is created.
    const m = manifest('Image', 'oci', t.ctx.namespace, { source: { oci: { repository: '127.0.0.1:5050/vm/cirros', tag: '0.6.2' } } });
    await expect(image.desired(m, t.ctx)).rejects.toMatchObject({ code: 'oci.network' });
  });
});
