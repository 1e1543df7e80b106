import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KupenstackError } from '../../../agent/errors.ts';
import { image } from '../../../agent/kinds/image/adapter.ts';
import type { AdapterContext, Remote } from '../../../agent/kinds/kit/adapter.ts';
import { ImageMemory } from '../../../agent/kinds/kit/image-memory.ts';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import { putImageData } from '../../../agent/glance/image-api.ts';
import { importDisk } from '../../../agent/glance/import.ts';
import { diskSourceFor } from '../../../agent/glance/registry-source.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { uniqueRepo, registries } from '../../support/oci.ts';
import { pushDiskAs, pushKubevirtAs, qcow2Disk } from '../kinds/image-oci-fixtures.ts';

/**
 * KubeVirt's two OCI disk formats against the real registry (127.0.0.1:5050)
 * and the real Glance: a containerDisk as KubeVirt builds one, and the VM
 * export of VEP #256 (`virtctl vmexport download --format=oci`: index, the
 * VirtualMachine as config, raw+zstd disk layers named by io.kubevirt.disk.name),
 * imported byte for byte; and `image export --format kubevirt` read back by
 * the import with the same bytes. Whatever is refused leaves nothing in Glance.
 */

const run = promisify(execFile);
const registry = registries.plain;
let t: TestProject;
const tag = randomBytes(3).toString('hex');

interface Glance extends Record<string, unknown> {
  id: string;
  status: string;
  size?: number | null;
  checksum?: string;
  os_hash_value?: string;
}

const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');
const sha512 = (b: Buffer): string => createHash('sha512').update(b).digest('hex');

/** A raw disk: random MiBs (no two tests share a blob), then zeros, `extra` odd bytes at the end. */
function rawDisk(mib: number, extra = 0): Buffer {
  const disk = Buffer.alloc(mib * 1024 * 1024 + extra);
  randomBytes(1024 * 1024).copy(disk, 512);
  return disk;
}

async function allImages(): Promise<Glance[]> {
  const q = { owner: t.ctx.projectId, visibility: 'all' };
  return [
    ...(await t.ctx.apis.image.list<Glance>('/images', 'images', q)),
    ...(await t.ctx.apis.image.list<Glance>('/images', 'images', { ...q, os_hidden: true })),
  ];
}

const g = (): Parameters<typeof importDisk>[0] => ({ image: t.ctx.apis.image, projectId: t.ctx.projectId });

/** An import that must fail with `code` and leave no image behind (neither active nor queued). */
async function refused(repo: string, code: string, disk?: string): Promise<KupenstackError> {
  const before = new Set((await allImages()).map((i) => i.id));
  const err = await importDisk(g(), diskSourceFor(), { repository: `${registry}/${repo}`, tag, insecure: true, ...(disk !== undefined ? { disk } : {}) }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KupenstackError);
  expect((err as KupenstackError).code).toBe(code);
  expect((await allImages()).filter((i) => !before.has(i.id)).map((i) => `${i.id} ${i.status}`)).toEqual([]);
  return err as KupenstackError;
}

/** The stored image matches `data` by Glance's own hashes. */
function expectSame(img: Glance, data: Buffer): void {
  expect({ status: img.status, size: img.size, checksum: img.checksum, os_hash_value: img.os_hash_value }).toEqual({
    status: 'active',
    size: data.length,
    checksum: md5(data),
    os_hash_value: sha512(data),
  });
}

beforeAll(async () => {
  t = await testProject('oci-kubevirt');
}, 180_000);

afterAll(async () => {
  if (!t) return;
  for (const img of await allImages()) await t.ctx.apis.image.call('DELETE', `/images/${img.id}`, { ok: [204, 404] });
  await t.dispose();
}, 120_000);

describe('KubeVirt containerDisk and VM export → Glance', () => {
  it('a containerDisk as KubeVirt builds it (FROM scratch, disk/disk.img owned 107:107, qcow2 inside) imports byte for byte', async () => {
    const disk = qcow2Disk();
    const repo = uniqueRepo('kubevirt-containerdisk');
    await pushDiskAs('containerdisk', repo, tag, disk, {}, [
      { name: 'disk/', type: 'directory' },
      { name: 'disk/disk.img', data: disk },
    ]);
    const r = await importDisk(g(), diskSourceFor(), { repository: `${registry}/${repo}`, tag, insecure: true });
    expectSame(r.image, disk);
    expect(r.image).toMatchObject({ disk_format: 'qcow2' });
    expect(r.image).not.toHaveProperty('oci_format');
  });

  it('a one-disk VM export (raw+zstd, compressed by the zstd tool) imports raw with its size and checksum, oci_format kubevirt-export', async () => {
    const disk = rawDisk(8, 4096 + 17);
    const repo = uniqueRepo('kubevirt-export');
    const pushed = await pushKubevirtAs(repo, tag, [{ name: 'rootdisk', data: disk }]);
    const r = await importDisk(g(), diskSourceFor(), { repository: `${registry}/${repo}`, tag, insecure: true });
    expectSame(r.image, disk);
    expect(r.manifestDigest).toBe(pushed.manifest);
    expect(r.image).toMatchObject({ disk_format: 'raw', oci_format: 'kubevirt-export', oci_manifest_digest: pushed.manifest });
    // Not named by the request: the manifest's one disk, no oci_disk.
    expect(r.image).not.toHaveProperty('oci_disk');
    // The same digest again: nothing downloaded, the same image.
    const again = await importDisk(g(), diskSourceFor(), { repository: `${registry}/${repo}`, tag, insecure: true });
    expect({ id: again.image.id, reused: again.reused, blobBytes: again.blobBytes }).toEqual({ id: r.image.id, reused: true, blobBytes: 0 });
  });

  it('a two-disk VM export is refused without a disk name (names listed, nothing in Glance); each named disk becomes its own image', async () => {
    const root = rawDisk(4);
    const data = rawDisk(2, 512);
    const repo = uniqueRepo('kubevirt-two-disks');
    await pushKubevirtAs(repo, tag, [
      { name: 'rootdisk', data: root },
      { name: 'datadisk', data },
    ]);
    const err = await refused(repo, 'oci.format');
    expect(err.message).toMatch(/2 disks \("rootdisk", "datadisk"\).*spec\.source\.oci\.disk/);
    expect((await refused(repo, 'oci.format', 'nodisk')).message).toMatch(/no disk named "nodisk"; its disks are "rootdisk", "datadisk"/);

    const second = await importDisk(g(), diskSourceFor(), { repository: `${registry}/${repo}`, tag, insecure: true, disk: 'datadisk' });
    expectSame(second.image, data);
    expect(second.image).toMatchObject({ oci_disk: 'datadisk' });
    // The other disk of the same manifest is another image, not the first one reused.
    const first = await importDisk(g(), diskSourceFor(), { repository: `${registry}/${repo}`, tag, insecure: true, disk: 'rootdisk' });
    expect(first.reused).toBe(false);
    expect(first.image.id).not.toBe(second.image.id);
    expectSame(first.image, root);
  });

  it('a size annotation that is not the disk’s size is refused while streaming: the queued image is deleted, nothing stays in Glance', async () => {
    const disk = rawDisk(3);
    for (const [label, size] of [
      ['larger', '4Mi'],
      ['smaller', '2Mi'],
    ] as const) {
      const repo = uniqueRepo(`kubevirt-size-${label}`);
      await pushKubevirtAs(repo, tag, [{ name: 'rootdisk', data: disk, sizeAnnotation: size }]);
      const err = await refused(repo, 'oci.size-mismatch');
      expect(err.message).toMatch(/size annotation states/);
    }
  });
});

describe('an Image manifest with spec.source.oci.disk', () => {
  /** The adapter context of one run, as the engine makes one. */
  function runCtx(): AdapterContext {
    const memos = new Map<string, Promise<unknown>>();
    return {
      ...t.ctx,
      images: new ImageMemory(),
      memo: <T>(key: string, load: () => Promise<T>): Promise<T> => {
        if (!memos.has(key)) memos.set(key, load());
        return memos.get(key) as Promise<T>;
      },
    };
  }

  it('imports the named disk of a two-disk VM export; without the name the create is refused and nothing is in Glance', async () => {
    const root = rawDisk(2, 99);
    const data = rawDisk(3);
    const repo = uniqueRepo('kubevirt-image-kind');
    const pushed = await pushKubevirtAs(repo, tag, [
      { name: 'rootdisk', data: root },
      { name: 'datadisk', data },
    ]);
    const oci = { repository: `${registry}/${repo}`, tag, insecure: true, sharing: 'private' };
    const before = new Set((await allImages()).map((i) => i.id));
    const unnamed = manifest('Image', 'vm-unnamed', t.ctx.namespace, { source: { oci } });
    const ctx = runCtx();
    const err = await (async () => {
      const desired = await image.desired(unnamed, ctx);
      await image.create(ctx, unnamed, desired, { owner: ctx.owner, ref: 'Image/vm-unnamed', specHash: replaceHash(image, desired) });
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KupenstackError);
    expect((err as KupenstackError).message).toMatch(/2 disks \("rootdisk", "datadisk"\)/);
    // The project's images are exactly those before: nothing made, nothing queued left behind.
    expect((await allImages()).map((i) => i.id).sort()).toEqual([...before].sort());

    const named = manifest('Image', 'vm-data', t.ctx.namespace, { source: { oci: { ...oci, disk: 'datadisk' } } });
    const ctx2 = runCtx();
    const desired = await image.desired(named, ctx2);
    await image.create(ctx2, named, desired, { owner: ctx2.owner, ref: 'Image/vm-data', specHash: replaceHash(image, desired) });
    // The engine's follow-up: observe again, and the update that stores the data.
    const mine = async (): Promise<Remote> => (await image.observe(ctx2)).find((r) => r.marker?.ref === 'Image/vm-data')!;
    const diff = difference(image, desired, await mine());
    if (Object.keys(diff.updates).length > 0) await image.update(ctx2, await mine(), diff.updates, named);
    const created = await mine();
    expect(difference(image, desired, created).updates).toEqual({});
    const stored = (await t.ctx.apis.image.call<Glance>('GET', `/images/${created.id}`)).body;
    expectSame(stored, data);
    // Another disk of the same manifest is another image: the plan replaces, it never relabels this one.
    const other = manifest('Image', 'vm-data', t.ctx.namespace, { source: { oci: { ...oci, disk: 'rootdisk' } } });
    expect(difference(image, await image.desired(other, runCtx()), created).replace).toBe(true);
    expect(stored).toMatchObject({
      name: 'vm-data',
      disk_format: 'raw',
      oci_format: 'kubevirt-export',
      oci_disk: 'datadisk',
      oci_manifest_digest: pushed.manifest,
      kupenstack_ref: 'Image/vm-data',
    });
  });
});

describe('kupenstack image export --format kubevirt', () => {
  let raw: Buffer;
  let rawImage: Glance;

  beforeAll(async () => {
    raw = rawDisk(6, 333);
    const created = await t.ctx.apis.image.call<Glance>('POST', '/images', {
      json: { name: `KubeVirt Export ${tag}`, disk_format: 'raw', container_format: 'bare', os_distro: 'cirros', min_ram: 128, architecture: 'x86_64' },
    });
    await putImageData(t.ctx.apis.image, created.body.id, Readable.from([raw]), { timeoutMs: 60_000 });
    rawImage = (await t.ctx.apis.image.call<Glance>('GET', `/images/${created.body.id}`)).body;
    expectSame(rawImage, raw);
  }, 120_000);

  const cli = (...args: string[]): Promise<{ stdout: string }> =>
    run(
      process.execPath,
      ['agent/cli/main.ts', 'image', 'export', ...args, '--cloud', 'kupenstack-local', '--project', t.ctx.projectId, '--insecure', '-o', 'json'],
      { maxBuffer: 1 << 20 },
    );

  it("writes KubeVirt's artifact (index, VirtualMachine config, raw+zstd layer, annotations) that the import reads back byte for byte", async () => {
    const repo = uniqueRepo('kubevirt-exported');
    const { stdout } = await cli(rawImage.id, `${registry}/${repo}:${tag}`, '--format', 'kubevirt', '--disk-name', 'bootdisk');
    const result = JSON.parse(stdout) as { indexDigest: string; manifestDigest: string; layer: { mediaType: string }; verified: string[] };
    expect(result.verified).toEqual(['os_hash_value (sha512)']);
    expect(result.layer.mediaType).toBe('application/vnd.kubevirt.disk.raw+zstd');

    // The artifact as KubeVirt's import reads it (fetched over the registry API, no KupenStack code).
    const get = async (path: string, accept: string): Promise<Buffer> =>
      Buffer.from(await (await request(`http://${registry}/v2/${repo}/${path}`, { headers: { accept } })).body.arrayBuffer());
    const index = JSON.parse((await get(`manifests/${tag}`, 'application/vnd.oci.image.index.v1+json')).toString()) as Record<string, unknown> & {
      manifests: Array<{ digest: string; platform: unknown }>;
    };
    expect(index).toMatchObject({ mediaType: 'application/vnd.oci.image.index.v1+json', artifactType: 'application/vnd.kubevirt.virtualmachine.v1' });
    expect(index.manifests).toEqual([expect.objectContaining({ digest: result.manifestDigest, platform: { architecture: 'amd64', os: 'linux' } })]);
    const manifest = JSON.parse((await get(`manifests/${result.manifestDigest}`, 'application/vnd.oci.image.manifest.v1+json')).toString()) as {
      artifactType: string;
      config: { mediaType: string; digest: string };
      layers: Array<{ mediaType: string; digest: string; annotations: Record<string, string> }>;
    };
    expect(manifest.artifactType).toBe('application/vnd.kubevirt.virtualmachine.v1');
    expect(manifest.config.mediaType).toBe('application/vnd.kubevirt.virtualmachine.config.v1+json');
    expect(manifest.layers).toHaveLength(1);
    expect(manifest.layers[0]!.annotations).toMatchObject({
      'io.kubevirt.disk.name': 'bootdisk',
      'io.kubevirt.disk.size': String(raw.length),
      'org.opencontainers.image.title': 'bootdisk.raw.zst',
    });
    const vm = JSON.parse((await get(`blobs/${manifest.config.digest}`, '*/*')).toString()) as {
      kind: string;
      metadata: { name: string };
      spec: { template: { spec: { volumes: Array<{ name: string }>; domain: { resources: { requests: { memory: string } } } } } };
    };
    expect(vm).toMatchObject({ kind: 'VirtualMachine', metadata: { name: `kubevirt-export-${tag}` } });
    expect(vm.spec.template.spec.volumes.map((v) => v.name)).toEqual(['bootdisk']);
    expect(vm.spec.template.spec.domain.resources.requests.memory).toBe('128Mi');
    // The layer decompressed by the zstd tool is Glance's data.
    const layer = await get(`blobs/${manifest.layers[0]!.digest}`, '*/*');
    expect(sha512(execFileSync('zstd', ['-dc'], { input: layer, maxBuffer: 1 << 30 }))).toBe(rawImage.os_hash_value);

    // Read back by the import: the same bytes, by Glance's own hashes, and the properties the export carried.
    const back = await importDisk(
      g(),
      diskSourceFor(),
      { repository: `${registry}/${repo}`, tag, insecure: true },
      { allowedProperties: ['os_distro', 'architecture'] },
    );
    expect(back.image.id).not.toBe(rawImage.id);
    expect({ size: back.image.size, checksum: back.image.checksum, os_hash_value: back.image.os_hash_value }).toEqual({
      size: rawImage.size,
      checksum: rawImage.checksum,
      os_hash_value: rawImage.os_hash_value,
    });
    expect(back.image).toMatchObject({ disk_format: 'raw', os_distro: 'cirros', architecture: 'x86_64', oci_format: 'kubevirt-export' });
  });

  it('refuses a qcow2 image before reading or pushing anything, naming the fix', async () => {
    const disk = qcow2Disk();
    const created = await t.ctx.apis.image.call<Glance>('POST', '/images', { json: { name: `qcow2-${tag}`, disk_format: 'qcow2', container_format: 'bare' } });
    await putImageData(t.ctx.apis.image, created.body.id, Readable.from([disk]), { timeoutMs: 60_000 });
    const repo = uniqueRepo('kubevirt-qcow2');
    const failed = await cli(created.body.id, `${registry}/${repo}:${tag}`, '--format', 'kubevirt').then(
      () => undefined,
      (e: { stderr: string }) => e,
    );
    expect(failed?.stderr).toMatch(/is qcow2; KubeVirt's VM export holds raw disks only.*qemu-img convert -O raw/s);
    const tags = await request(`http://${registry}/v2/${repo}/tags/list`);
    expect(tags.statusCode).toBe(404);
    await tags.body.dump();
  });
});
