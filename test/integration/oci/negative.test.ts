import { openSync, readFileSync, readSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack, type Header } from 'tar-stream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RegistryDiskSource } from '../../../oci/registry-disk-source.ts';
import { pushDisk } from '../../../oci/push.ts';
import { FaultProxy } from '../../support/fault-proxy.ts';
import { client, drain, plainBlobPath, pushRaw, qemuImg, randomFile, registries, sha256File, tempDir, uniqueRepo } from '../../support/oci.ts';

/**
 * The negative corpus, at the registry level: every bad artifact is really
 * stored in the test-bed registry (or broken on the wire by a proxy in front
 * of it), and the pipeline must refuse it with a typed error before the
 * stream ends — a consumer forwarding 'end' never completes a bad upload.
 */

const plain = registries.plain;
const vmimage = 'application/vnd.kupenstack.vmimage.v1';

async function containerDiskLayer(entries: Array<{ header: Partial<Header> & Pick<Header, 'name'>; body?: Buffer }>): Promise<Buffer> {
  const p = pack();
  for (const e of entries) p.entry(e.header, e.body ?? Buffer.alloc(0));
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as AsyncIterable<Buffer>) chunks.push(c);
  return gzipSync(Buffer.concat(chunks));
}

const imageConfig = { mediaType: 'application/vnd.oci.image.config.v1+json', data: Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } })) };

describe('negative corpus: refused before the stream ends', () => {
  let dir: string;
  let qcow2: Buffer;
  const source = new RegistryDiskSource();

  beforeAll(async () => {
    dir = tempDir();
    await qemuImg('create', '-q', '-f', 'qcow2', join(dir, 'base.qcow2'), '64M');
    await qemuImg('create', '-q', '-f', 'qcow2', '-b', join(dir, 'base.qcow2'), '-F', 'qcow2', join(dir, 'child.qcow2'));
    qcow2 = readFileSync(join(dir, 'base.qcow2'));
  });

  it('a blob corrupted at rest (the registry serves it with its old digest) fails with oci.digest, last byte never handed out', async () => {
    const repo = uniqueRepo('corrupt');
    const file = randomFile(dir, 'corrupt.raw', 1024 * 1024);
    const pushed = await pushDisk(file, `${plain}/${repo}:1`, { insecure: true });
    // Flip one byte past the pre-flight window, in the registry's own storage.
    const fd = openSync(plainBlobPath(pushed.layer.digest), 'r+');
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, 600_000);
    b[0] = b[0]! ^ 0xff;
    writeSync(fd, b, 0, 1, 600_000);
    closeSync(fd);
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: '1', insecure: true });
    const got = await drain((await source.open(resolved)).stream);
    expect(got.error).toMatchObject({ code: 'oci.digest' });
    expect((got.error as Error).message).toMatch(/hash to sha256:/);
    expect(got.bytes).toBeLessThan(resolved.blob.size);
  });

  it('a manifest whose layer descriptor understates the blob size is refused (more bytes than declared)', async () => {
    const repo = uniqueRepo('size-lie');
    const c = client();
    const data = readFileSync(randomFile(dir, 'lie.raw', 200_000));
    // The lying manifest is stored in the registry and resolved from there, as a consumer would meet it.
    await pushRaw(c, repo, 'lie', { artifactType: vmimage, layers: [{ mediaType: 'application/vnd.diskimage.raw', data, statedSize: 150_000 }] });
    const lie = await source.resolve({ repository: `${plain}/${repo}`, tag: 'lie', insecure: true });
    expect(lie.blob.size).toBe(150_000);
    const got = await drain((await source.open(lie)).stream);
    expect(got.error).toMatchObject({ code: 'oci.too-large' });
    expect(got.bytes).toBeLessThan(150_000);
  });

  it('a qcow2 with a backing file is refused at resolve (artifact) and inside a containerDisk', async () => {
    const child = readFileSync(join(dir, 'child.qcow2'));
    const c = client();
    const repo = uniqueRepo('backing');
    await pushRaw(c, repo, 'artifact', { artifactType: vmimage, layers: [{ mediaType: 'application/vnd.diskimage.qcow2', data: child, annotations: { 'org.opencontainers.image.title': 'child.qcow2' } }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'artifact', insecure: true })).rejects.toMatchObject({ code: 'image.unsafe', message: expect.stringContaining('backing file') as unknown });
    const layer = await containerDiskLayer([{ header: { name: 'disk/disk.img', size: child.length }, body: child }]);
    await pushRaw(c, repo, 'containerdisk', { config: imageConfig, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: layer }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'containerdisk', insecure: true })).rejects.toMatchObject({ code: 'image.unsafe' });
  });

  it('a declared format the bytes contradict: at resolve for a plain layer, in open() for a compressed one', async () => {
    const c = client();
    const repo = uniqueRepo('mismatch');
    const raw = readFileSync(randomFile(dir, 'notqcow.raw', 300_000));
    await pushRaw(c, repo, 'plain', { artifactType: vmimage, layers: [{ mediaType: 'application/vnd.diskimage.qcow2', data: raw }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'plain', insecure: true })).rejects.toMatchObject({ code: 'oci.format-mismatch' });
    await pushRaw(c, repo, 'gz', { artifactType: vmimage, layers: [{ mediaType: 'application/vnd.diskimage.qcow2.gzip', data: gzipSync(raw) }] });
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: 'gz', insecure: true });
    await expect(source.open(resolved)).rejects.toMatchObject({ code: 'oci.format-mismatch', message: expect.stringContaining('declares a qcow2 disk but its bytes are raw') as unknown });
  });

  it('containerDisk layers with a symlinked disk or a path-traversal entry are refused', async () => {
    const c = client();
    const repo = uniqueRepo('tar-attacks');
    const symlink = await containerDiskLayer([{ header: { name: 'disk/', type: 'directory' } }, { header: { name: 'disk/disk.img', type: 'symlink', linkname: '/etc/shadow' } }]);
    await pushRaw(c, repo, 'symlink', { config: imageConfig, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: symlink }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'symlink', insecure: true })).rejects.toMatchObject({ code: 'oci.unsafe', message: expect.stringContaining('symlink') as unknown });
    const traversal = await containerDiskLayer([
      { header: { name: '../../../../etc/cron.d/evil', size: 4 }, body: Buffer.from('evil') },
      { header: { name: 'disk/disk.img', size: qcow2.length }, body: qcow2 },
    ]);
    await pushRaw(c, repo, 'traversal', { config: imageConfig, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: traversal }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'traversal', insecure: true })).rejects.toMatchObject({ code: 'oci.unsafe', message: expect.stringContaining('climbs out') as unknown });
  });

  it('a containerDisk built for another architecture, or a bootc container, is refused by its image config', async () => {
    const c = client();
    const repo = uniqueRepo('cd-config');
    const layer = await containerDiskLayer([{ header: { name: 'disk/disk.qcow2', size: qcow2.length }, body: qcow2 }]);
    const armConfig = { mediaType: imageConfig.mediaType, data: Buffer.from(JSON.stringify({ architecture: 'arm64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } })) };
    await pushRaw(c, repo, 'arm', { config: armConfig, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: layer }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'arm', insecure: true })).rejects.toMatchObject({ code: 'oci.platform', message: expect.stringContaining('for arm64, not amd64') as unknown });
    const arm = await source.resolve({ repository: `${plain}/${repo}`, tag: 'arm', insecure: true, platform: { architecture: 'aarch64' } });
    expect(arm.diskFormat).toBe('qcow2');
    const bootcConfig = { mediaType: imageConfig.mediaType, data: Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Labels: { 'containers.bootc': '1' } }, rootfs: { type: 'layers', diff_ids: [] } })) };
    await pushRaw(c, repo, 'bootc', { config: bootcConfig, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: layer }] });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'bootc', insecure: true })).rejects.toMatchObject({ code: 'oci.format', message: expect.stringContaining('bootable container') as unknown });
  });

  it('more than one disk (layers or containerDisk entries) is ambiguous and refused', async () => {
    const c = client();
    const repo = uniqueRepo('two-disks');
    await pushRaw(c, repo, 'layers', {
      artifactType: vmimage,
      layers: [
        { mediaType: 'application/vnd.diskimage.qcow2', data: qcow2 },
        { mediaType: 'application/vnd.diskimage.raw', data: Buffer.alloc(4096, 1) },
      ],
    });
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'layers', insecure: true })).rejects.toMatchObject({ code: 'oci.format' });
    const two = await containerDiskLayer([
      { header: { name: 'disk/a.qcow2', size: qcow2.length }, body: qcow2 },
      { header: { name: 'disk/b.qcow2', size: qcow2.length }, body: qcow2 },
    ]);
    await pushRaw(c, repo, 'entries', { config: imageConfig, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: two }] });
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: 'entries', insecure: true });
    const got = await drain((await source.open(resolved)).stream);
    expect(got.error).toMatchObject({ code: 'oci.format', message: expect.stringContaining('two disk files') as unknown });
  });

  it('oversize: refused at resolve when the size is known, mid-stream when only decompression tells', async () => {
    // The limit is above one decompressed chunk (256 KiB), so the bomb's refusal comes mid-stream, after bytes went out.
    const small = new RegistryDiskSource({ maxDiskBytes: 600_000 });
    const repo = uniqueRepo('oversize');
    await pushDisk(randomFile(dir, 'big.raw', 1_200_000), `${plain}/${repo}:plain`, { insecure: true });
    await expect(small.resolve({ repository: `${plain}/${repo}`, tag: 'plain', insecure: true })).rejects.toMatchObject({ code: 'oci.too-large', message: expect.stringContaining('before downloading') as unknown });
    // A gzip bomb in miniature: 3 MB of zeros, a few KB compressed, no size annotation.
    await pushRaw(client(), repo, 'bomb', { artifactType: vmimage, layers: [{ mediaType: 'application/vnd.diskimage.raw.gzip', data: gzipSync(Buffer.alloc(3_000_000)) }] });
    const resolved = await small.resolve({ repository: `${plain}/${repo}`, tag: 'bomb', insecure: true });
    const got = await drain((await small.open(resolved)).stream);
    expect(got.error).toMatchObject({ code: 'oci.too-large' });
    expect(got.bytes).toBeGreaterThan(0);
    expect(got.bytes).toBeLessThanOrEqual(600_000);
  });

  describe('a broken network between us and the real registry (fault proxy)', () => {
    let proxy: FaultProxy | undefined;
    afterEach(async () => {
      await proxy?.stop();
      proxy = undefined;
    });

    async function setup(tag: string, size: number): Promise<{ proxy: FaultProxy; repo: string; file: string }> {
      const repo = uniqueRepo(tag);
      const file = randomFile(dir, `${tag}.raw`, size);
      await pushDisk(file, `${plain}/${repo}:1`, { insecure: true });
      proxy = await new FaultProxy(plain).start();
      return { proxy, repo, file };
    }

    it('a connection cut mid-blob is resumed with Range and the bytes still verify', async () => {
      const { proxy: p, repo, file } = await setup('resume', 2 * 1024 * 1024);
      const src = new RegistryDiskSource();
      const resolved = await src.resolve({ repository: `${p.address}/${repo}`, tag: '1', insecure: true });
      p.rules = [{ method: 'GET', path: /\/blobs\/sha256:/, range: false, fault: { kind: 'cut', afterBytes: 700_000 }, times: 1 }];
      const opened = await src.open(resolved);
      const got = await drain(opened.stream);
      expect(got.error).toBeUndefined();
      expect(got.digest).toBe(await sha256File(file));
      const blobGets = p.seen.filter((s) => s.method === 'GET' && s.path.includes('/blobs/') && s.headers.range !== 'bytes=0-65535');
      expect(blobGets.length).toBe(2);
      expect(blobGets[1]!.headers.range).toMatch(/^bytes=\d+-$/);
      expect(Number(/bytes=(\d+)-/.exec(blobGets[1]!.headers.range!)![1])).toBeGreaterThan(0);
      expect(opened.bytesFromRegistry()).toBe(2 * 1024 * 1024);
    });

    it('a registry 5xx on the resume request is retried; a stream that keeps breaking ends in oci.truncated', async () => {
      const { proxy: p, repo, file } = await setup('fivexx', 1024 * 1024);
      const src = new RegistryDiskSource({ retries: 3 });
      const resolved = await src.resolve({ repository: `${p.address}/${repo}`, tag: '1', insecure: true });
      p.rules = [
        { method: 'GET', path: /\/blobs\/sha256:/, range: false, fault: { kind: 'cut', afterBytes: 300_000 }, times: 1 },
        { method: 'GET', path: /\/blobs\/sha256:/, range: true, fault: { kind: 'status', status: 503 }, times: 1 },
      ];
      const ok = await drain((await src.open(resolved)).stream);
      expect(ok.error).toBeUndefined();
      expect(ok.digest).toBe(await sha256File(file));
      expect(p.seen.some((s) => s.status === 503)).toBe(true);

      // Now every attempt breaks: cut, then 5xx forever.
      p.rules = [
        { method: 'GET', path: /\/blobs\/sha256:/, range: false, fault: { kind: 'cut', afterBytes: 300_000 } },
        { method: 'GET', path: /\/blobs\/sha256:/, range: true, fault: { kind: 'status', status: 502 } },
      ];
      const bad = await drain((await src.open(resolved)).stream);
      expect(bad.error).toMatchObject({ code: 'oci.truncated' });
      expect((bad.error as Error).message).toMatch(/broke off .* times .*of 1048576 bytes/);
      expect(bad.bytes).toBeLessThan(1024 * 1024);
    });

    it('a cut that is never healed ends in oci.truncated after the retry budget', async () => {
      const { proxy: p, repo } = await setup('truncated', 1024 * 1024);
      const src = new RegistryDiskSource({ retries: 2 });
      const resolved = await src.resolve({ repository: `${p.address}/${repo}`, tag: '1', insecure: true });
      p.rules = [{ method: 'GET', path: /\/blobs\/sha256:/, fault: { kind: 'cut', afterBytes: 100_000 } }];
      const got = await drain((await src.open(resolved)).stream);
      expect(got.error).toMatchObject({ code: 'oci.truncated' });
      expect(got.bytes).toBeLessThan(1024 * 1024);
      expect(p.seen.filter((s) => s.path.includes('/blobs/')).length).toBe(2 + 1 + 1); // pre-flight, first GET, 2 resumes
    });
  });
});
