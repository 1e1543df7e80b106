import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference, replaceHash } from '../../agent/plan/diff.ts';
import { KupenstackError } from '../../agent/errors.ts';
import { image } from '../../agent/kinds/image/adapter.ts';
import { importDisk } from '../../agent/glance/import.ts';
import { diskSourceFor } from '../../agent/glance/registry-source.ts';
import { manifest, testProject, type TestProject } from '../support/context.ts';
import { backedQcow2, corruptBlobAtRest, faultProxy, pushBlob, pushDiskAs, qcow2Disk, registry, target } from './kinds/image-oci-fixtures.ts';

/**
 * The negative corpus at the Glance level: whatever the registry side hands
 * over or fails at, Glance never ends up with an `active` image of wrong
 * content, nor with a `queued` image once the retry budget is spent.
 */

let t: TestProject;
let proxy: Awaited<ReturnType<typeof faultProxy>>;
const run = randomBytes(3).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'ks-oci-faults-'));
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface RawImage extends Record<string, unknown> {
  id: string;
  status: string;
  size: number | null;
}

beforeAll(async () => {
  t = await testProject('oci-faults');
  proxy = await faultProxy();
});

afterAll(async () => {
  await proxy.close();
  for (const img of await allImages()) await t.ctx.apis.image.call('DELETE', `/images/${img.id}`, { ok: [204, 404] });
  rmSync(dir, { recursive: true, force: true });
  await t.dispose();
});

async function allImages(): Promise<RawImage[]> {
  const q = { owner: t.ctx.projectId, visibility: 'all' };
  return [...(await t.ctx.apis.image.list<RawImage>('/images', 'images', q)), ...(await t.ctx.apis.image.list<RawImage>('/images', 'images', { ...q, os_hidden: true }))];
}

const g = (): Parameters<typeof importDisk>[0] => ({ image: t.ctx.apis.image, compute: t.ctx.apis.compute, projectId: t.ctx.projectId });

const imageCalls = (method: string, status?: number): number => t.cloud.counters.sum((e) => e.service === 'image' && e.method === method && (status === undefined || e.status === status));

/**
 * Imports and expects a typed refusal with exactly `code`; afterwards the
 * project holds no image at all (neither active nor queued). `uploaded`: the
 * failure came during the upload, so Glance did get one queued image, which
 * was deleted; otherwise no POST reached Glance at all.
 */
async function refused(repository: string, tag: string, code: string, source = diskSourceFor(), uploaded = false): Promise<KupenstackError> {
  const before = new Set((await allImages()).map((i) => i.id));
  const [posts, anyPosts, deletes] = [imageCalls('POST', 201), imageCalls('POST'), imageCalls('DELETE', 204)];
  const err = await importDisk(g(), source, { repository, tag, insecure: true }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KupenstackError);
  expect((err as KupenstackError).code).toBe(code);
  const left = (await allImages()).filter((i) => !before.has(i.id));
  expect(left.map((i) => `${i.id} ${i.status}`)).toEqual([]);
  expect({ posts: imageCalls('POST', 201) - posts, anyPosts: imageCalls('POST') - anyPosts, deletes: imageCalls('DELETE', 204) - deletes }).toEqual(
    uploaded ? { posts: 1, anyPosts: 1, deletes: 1 } : { posts: 0, anyPosts: 0, deletes: 0 },
  );
  return err as KupenstackError;
}

describe('OCI import: the negative corpus never leaves a wrong or half-made image in Glance', () => {
  it('corrupt blob at rest (digest mismatch): refused, the queued image deleted', async () => {
    const disk = qcow2Disk();
    const repo = `faults/corrupt-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', disk);
    corruptBlobAtRest(`sha256:${sha(disk)}`);
    const err = await refused(`${registry}/${repo}`, 'v1', 'oci.digest', diskSourceFor(), true);
    expect(err.message).toMatch(/digest|sha256/);
  });

  it('qcow2 with a backing file: refused before anything is stored', async () => {
    const repo = `faults/backing-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', backedQcow2());
    await refused(`${registry}/${repo}`, 'v1', 'image.unsafe');
  });

  it('declared qcow2, content raw (format mismatch): refused', async () => {
    const repo = `faults/mismatch-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', randomBytes(2 * 1024 * 1024));
    await refused(`${registry}/${repo}`, 'v1', 'oci.format-mismatch');
  });

  it('containerDisk whose disk is a symlink: refused', async () => {
    const repo = `faults/symlink-${run}`;
    await pushDiskAs('containerdisk', repo, 'v1', Buffer.alloc(0), {}, [
      { name: 'disk/', type: 'directory' },
      { name: 'disk/disk.qcow2', type: 'symlink', linkname: '/etc/shadow' },
    ]);
    await refused(`${registry}/${repo}`, 'v1', 'oci.unsafe');
  });

  it('containerDisk with a path-traversal entry: refused', async () => {
    const repo = `faults/traversal-${run}`;
    await pushDiskAs('containerdisk', repo, 'v1', Buffer.alloc(0), {}, [
      { name: 'disk/', type: 'directory' },
      { name: 'disk/../../disk.qcow2', data: qcow2Disk() },
    ]);
    await refused(`${registry}/${repo}`, 'v1', 'oci.unsafe');
  });

  it('a blob stream that always breaks half way (truncated): refused after the retry budget, nothing left in Glance', async () => {
    const repo = `faults/truncate-always-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', qcow2Disk());
    proxy.set('truncate-always');
    try {
      const err = await refused(`${proxy.host}/${repo}`, 'v1', 'oci.truncated', diskSourceFor(), true);
      expect(err.message).toMatch(/broke off \d+ times/);
      // Every download was cut, and every one after the first resumed where the last stopped.
      const wire = proxy.blobs();
      expect(wire.length).toBeGreaterThanOrEqual(2);
      expect(wire.map((b) => b.cut)).toEqual(wire.map(() => true));
      expect(wire[0]!.range).toBeUndefined();
      expect(wire.slice(1).map((b) => /^bytes=[1-9]\d*-$/.test(b.range ?? ''))).toEqual(wire.slice(1).map(() => true));
    } finally {
      proxy.set('none');
    }
  });

  it('a registry 5xx after the blob broke mid-way: refused after the retry budget, nothing left in Glance', async () => {
    const repo = `faults/truncate-then-5xx-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', qcow2Disk());
    proxy.set('truncate-then-5xx');
    try {
      const err = await refused(`${proxy.host}/${repo}`, 'v1', 'oci.truncated', diskSourceFor(), true);
      expect(err.message).toContain('last: HTTP 503');
      // First the cut mid-way (a whole-blob GET), then only resumptions, each answered 503.
      const [first, ...rest] = proxy.blobs();
      expect(first).toMatchObject({ range: undefined, status: 200, cut: true });
      expect(rest.length).toBeGreaterThanOrEqual(1);
      expect(rest.map((b) => ({ resume: /^bytes=[1-9]\d*-$/.test(b.range ?? ''), status: b.status }))).toEqual(rest.map(() => ({ resume: true, status: 503 })));
    } finally {
      proxy.set('none');
    }
  });

  it('a blob stream broken once is resumed: the image is complete and right', async () => {
    const disk = qcow2Disk();
    const repo = `faults/resume-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', disk);
    proxy.set('truncate-once');
    try {
      const r = await importDisk(g(), diskSourceFor(), { repository: `${proxy.host}/${repo}`, tag: 'v1', insecure: true });
      expect(r.image).toMatchObject({ status: 'active', size: disk.length, checksum: createHash('md5').update(disk).digest('hex') });
      // On the wire: the first download cut half way, then one resumption served in part (206) from a byte past 0
      // and no further than the proxy let through (bytes in flight when the socket died are lost, so not exactly half).
      const wire = proxy.blobs();
      expect(wire.map((w) => ({ ...w, range: w.range?.replace(/\d+/, 'N') }))).toEqual([
        { range: undefined, status: 200, cut: true },
        { range: 'bytes=N-', status: 206, cut: false },
      ]);
      const from = Number(/^bytes=(\d+)-$/.exec(wire[1]!.range!)![1]);
      expect(from).toBeGreaterThan(0);
      expect(from).toBeLessThanOrEqual(Math.floor(disk.length / 2));
    } finally {
      proxy.set('none');
    }
  });

  it('wrong registry credentials: a typed auth error, nothing created in Glance', async () => {
    const repo = `faults/auth-${run}`;
    const saved = { ...target };
    Object.assign(target, { registry: '127.0.0.1:5051', auth: `Basic ${Buffer.from('kupenstack:testbed-secret').toString('base64')}` });
    try {
      await pushBlob(repo, Buffer.from('{}'));
      await pushDiskAs('kupenstack-artifact', repo, 'v1', qcow2Disk());
    } finally {
      Object.assign(target, saved);
    }
    const config = join(dir, 'wrong.json');
    writeFileSync(config, JSON.stringify({ auths: { '127.0.0.1:5051': { auth: Buffer.from('kupenstack:not-the-password').toString('base64') } } }));
    const err = await refused(`127.0.0.1:5051/${repo}`, 'v1', 'oci.auth', diskSourceFor({ dockerConfig: config }));
    expect(err.message).not.toContain('not-the-password');
  });

  it('the Image kind: a corrupt blob fails the apply and leaves no queued image behind', async () => {
    const disk = qcow2Disk();
    const repo = `faults/kind-${run}`;
    await pushDiskAs('kupenstack-artifact', repo, 'v1', disk);
    corruptBlobAtRest(`sha256:${sha(disk)}`);
    const m = manifest('Image', 'rotten', t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'v1', insecure: true, sharing: 'private' } } });
    const desired = await image.desired(m, t.ctx);
    const created = await image.create(t.ctx, m, desired, { owner: t.ctx.owner, ref: 'Image/rotten', specHash: replaceHash(image, desired) });
    expect(created.status).toBe('queued');
    const err = await image.update(t.ctx, created, difference(image, desired, created).updates, m).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KupenstackError);
    // The kind's own wrapper, carrying the registry side's digest refusal as its cause.
    expect(err).toMatchObject({ name: 'KupenstackError', code: 'oci.digest' });
    expect((err as Error).cause).toMatchObject({ name: 'OciError', code: 'oci.digest' });
    expect(await t.ctx.apis.image.find(`/images/${created.id}`)).toBeUndefined();
    expect((await image.observe(t.ctx)).filter((r) => r.marker?.ref === 'Image/rotten')).toEqual([]);
  });
});
