import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureGlanceDiskFormat, glanceImportInfo } from '../../../agent/glance/raw-target.ts';
import { ociImageId } from '../../../agent/glance/version-rules.ts';
import { ociTransfers } from '../../../agent/glance/versions.ts';
import { image } from '../../../agent/kinds/image/adapter.ts';
import type { AdapterContext, Remote } from '../../../agent/kinds/kit/adapter.ts';
import { ImageMemory } from '../../../agent/kinds/kit/image-memory.ts';
import type { Manifest } from '../../../agent/model/manifest.ts';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { pushDiskAs, qcow2Disk, registry } from './image-oci-fixtures.ts';

/**
 * A cloud that wants raw (Ceph RBD; here `--glance-disk-format raw` on the
 * test bed's file store, whose Glance runs the image_conversion plugin for
 * the interoperable import only): a qcow2 artifact is staged and imported
 * through glance-direct and lands raw, with the qcow2's virtual size.
 * PUT /file, the default, is covered by image-oci.test.ts unchanged.
 */

let t: TestProject;
const run = randomBytes(3).toString('hex');
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface RawImage extends Record<string, unknown> {
  id: string;
  status: string;
  size: number | null;
  disk_format: string;
}

beforeAll(async () => {
  t = await testProject('image-oci-raw');
  configureGlanceDiskFormat('raw');
});

afterAll(async () => {
  configureGlanceDiskFormat('auto');
  for (const img of await allImages()) await t.ctx.apis.image.call('DELETE', `/images/${img.id}`, { ok: [204, 404] });
  await t.dispose();
});

async function allImages(): Promise<RawImage[]> {
  const q = { owner: t.ctx.projectId, visibility: 'all' };
  return [...(await t.ctx.apis.image.list<RawImage>('/images', 'images', q)), ...(await t.ctx.apis.image.list<RawImage>('/images', 'images', { ...q, os_hidden: true }))];
}

async function download(id: string): Promise<Buffer> {
  const token = await t.ctx.apis.image.session.token(t.ctx.apis.image.scope);
  const res = await fetch(`${await t.ctx.apis.image.base()}/images/${id}/file`, { headers: { 'x-auth-token': token.value } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** qemu-img's own conversion of the disk, to compare Glance's with. */
function qemuRaw(qcow2: Buffer): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'ks-oci-raw-'));
  try {
    writeFileSync(join(dir, 'd.qcow2'), qcow2);
    execFileSync('qemu-img', ['convert', '-q', '-f', 'qcow2', '-O', 'raw', join(dir, 'd.qcow2'), join(dir, 'd.raw')]);
    return readFileSync(join(dir, 'd.raw'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A qcow2 whose header, tables and safety checks are sound (our sniff and
 * Glance's inspector pass it) but whose compressed data is garbage: qemu-img
 * convert fails reading it, inside Glance's import.
 */
function corruptQcow2(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'ks-oci-bad-'));
  try {
    writeFileSync(join(dir, 'd.raw'), Buffer.from(randomBytes(786432).toString('base64')));
    execFileSync('qemu-img', ['convert', '-q', '-c', '-f', 'raw', '-O', 'qcow2', join(dir, 'd.raw'), join(dir, 'd.qcow2')]);
    const b = readFileSync(join(dir, 'd.qcow2'));
    b.fill(0x5a, b.length - 200_000, b.length - 1000);
    return b;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const images = new ImageMemory();

function runCtx(): AdapterContext {
  const memos = new Map<string, Promise<unknown>>();
  return {
    ...t.ctx,
    images,
    memo: <T>(key: string, load: () => Promise<T>): Promise<T> => {
      if (!memos.has(key)) memos.set(key, load());
      return memos.get(key) as Promise<T>;
    },
  };
}

/** The engine's steps for one manifest in one run; answers what was done (created, the fields updated). */
async function applyOne(m: Manifest): Promise<{ remote: Remote; created: boolean; updated: string[] }> {
  const ctx = runCtx();
  const mine = async (): Promise<Remote | undefined> => (await image.observe(ctx)).find((r) => r.marker?.ref === `Image/${m.metadata.name}`);
  let remote = await mine();
  const created = !remote;
  const desired = await image.desired(m, ctx);
  if (!remote) remote = await image.create(ctx, m, desired, { owner: ctx.owner, ref: `Image/${m.metadata.name}`, specHash: replaceHash(image, desired) });
  const diff = difference(image, desired, remote);
  expect(diff.replace).toBe(false);
  const updated = Object.keys(diff.updates);
  if (updated.length > 0) await image.update(ctx, remote, diff.updates, m);
  const after = await mine();
  expect(after).toBeDefined();
  expect(difference(image, desired, after!).updates).toEqual({});
  return { remote: after!, created, updated };
}

describe('a cloud that wants raw images (Glance converts through the interoperable import)', () => {
  it("the test bed's Glance offers glance-direct (what the raw path needs)", async () => {
    expect((await glanceImportInfo(t.ctx.apis.image)).methods).toContain('glance-direct');
  });

  it('lands a qcow2 artifact raw, with its virtual size and bytes; a second apply imports nothing', async () => {
    const disk = qcow2Disk();
    const repo = `it/raw-${run}`;
    const digest = await pushDiskAs('kupenstack-artifact', repo, 'v1', disk);
    // diskFormat names the artifact's format: the raw image it becomes is no drift.
    const m = manifest('Image', 'img-raw', t.ctx.namespace, { diskFormat: 'qcow2', source: { oci: { repository: `${registry}/${repo}`, tag: 'v1', insecure: true, sharing: 'private' } } });
    const uploads = ociTransfers.uploads;
    const first = await applyOne(m);
    expect(ociTransfers.uploads).toBe(uploads + 1);
    const raw = await t.ctx.apis.image.get<RawImage>(`/images/${first.remote.id}`);
    const expected = qemuRaw(disk);
    expect(expected.length).toBe(64 * 1024 * 1024);
    expect(raw).toMatchObject({
      id: ociImageId(t.ctx.projectId, digest),
      status: 'active',
      disk_format: 'raw',
      size: expected.length,
      virtual_size: expected.length,
      oci_manifest_digest: digest,
      oci_source_disk_format: 'qcow2',
    });
    expect(sha(await download(first.remote.id))).toBe(sha(expected));

    const bytes = ociTransfers.blobBytes;
    const second = await applyOne(m);
    expect(second).toMatchObject({ created: false, updated: [] });
    expect(second.remote.id).toBe(first.remote.id);
    expect(ociTransfers.uploads).toBe(uploads + 1);
    expect(ociTransfers.blobBytes).toBe(bytes);
    expect((await allImages()).filter((i) => i.oci_manifest_digest === digest)).toHaveLength(1);
  });

  it("a qcow2 that Glance's conversion fails on: the error carries Glance's message, and no image is left", async () => {
    const repo = `it/raw-bad-${run}`;
    const digest = await pushDiskAs('kupenstack-artifact', repo, 'v1', corruptQcow2());
    const m = manifest('Image', 'img-raw-bad', t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'v1', insecure: true, sharing: 'private' } } });
    const err = await applyOne(m).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'image.import-failed' });
    const message = (err as Error).message;
    expect(message).toContain("Glance's import of image");
    expect(message).toContain('Task failed');
    expect(message).toContain('was deleted');
    expect((await allImages()).filter((i) => i.oci_manifest_digest === digest)).toEqual([]);
  });
});
