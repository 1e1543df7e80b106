import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256Of } from '../../../oci/digest.ts';
import { ociIndex } from '../../../oci/media-types.ts';
import { pushDisk } from '../../../oci/push.ts';
import { RegistryDiskSource } from '../../../oci/registry-disk-source.ts';
import { putManifest } from '../../../oci/upload.ts';
import { headManifest } from '../../../oci/manifest.ts';
import { client, drain, oras, orasBin, pushRaw, qemuImg, randomFile, registries, sha256File, skopeo, tempDir, uniqueRepo } from '../../support/oci.ts';

const run = promisify(execFile);
const plain = registries.plain;

async function tarWith(entries: Array<{ name: string; data: Buffer }>): Promise<Buffer> {
  const p = pack();
  p.entry({ name: 'disk/', type: 'directory', uid: 107, gid: 107, mode: 0o555 });
  for (const e of entries) p.entry({ name: e.name, size: e.data.length, uid: 107, gid: 107, mode: 0o444 }, e.data);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

describe('OCI interoperability with oras and skopeo (registry 127.0.0.1:5050)', () => {
  let dir: string;
  let qcow2: string;
  const source = new RegistryDiskSource();

  beforeAll(async () => {
    dir = tempDir();
    qcow2 = join(dir, 'cirros.qcow2');
    await qemuImg('create', '-q', '-f', 'qcow2', qcow2, '256M');
    // Some data so the qcow2 is more than its header.
    await qemuImg('bench', '-q', '-w', '-c', '64', '-s', '65536', '-f', 'qcow2', qcow2);
    expect(statSync(qcow2).size, 'qemu-img bench wrote 4 MiB of clusters').toBeGreaterThan(4 * 1024 * 1024);
  });

  it('a disk pushed by kupenstack is pulled by oras byte for byte, and read back by our resolve/open', async () => {
    const repo = uniqueRepo('push');
    const ref = `${plain}/${repo}:0.6.2`;
    const pushed = await pushDisk(qcow2, ref, { insecure: true, osDistro: 'cirros', osVersion: '0.6.2', arch: 'amd64', annotations: { 'io.kupenstack.vmimage.property.hw_disk_bus': 'virtio' } });
    expect(pushed.diskFormat).toBe('qcow2');

    const out = tempDir();
    await oras('pull', '--plain-http', '-o', out, ref);
    expect(await sha256File(join(out, 'cirros.qcow2'))).toBe(await sha256File(qcow2));
    const fetched = JSON.parse(await oras('manifest', 'fetch', '--plain-http', ref)) as { artifactType: string; config: { mediaType: string }; layers: Array<{ mediaType: string }> };
    expect(fetched.artifactType).toBe('application/vnd.kupenstack.vmimage.v1');
    expect(fetched.config.mediaType).toBe('application/vnd.oci.empty.v1+json');
    expect(fetched.layers.map((l) => l.mediaType)).toEqual(['application/vnd.diskimage.qcow2']);

    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: '0.6.2', insecure: true });
    expect(resolved).toMatchObject({ packaging: 'kupenstack-artifact', diskFormat: 'qcow2', manifestDigest: pushed.manifestDigest, tag: '0.6.2' });
    expect(resolved.properties).toMatchObject({ os_distro: 'cirros', os_version: '0.6.2', architecture: 'x86_64', os_type: 'linux', hw_disk_bus: 'virtio' });
    expect(resolved.virtualSize).toBe(256 * 1024 * 1024);
    const opened = await source.open(resolved);
    expect(opened.sniffedFormat).toBe('qcow2');
    const got = await drain(opened.stream);
    expect(got.error).toBeUndefined();
    expect(got.digest).toBe(await sha256File(qcow2));
    expect(opened.bytesFromRegistry()).toBe(resolved.blob.size);
  });

  it('a gzip- and a zstd-compressed raw disk come back decompressed, verified against the uncompressed digest', async () => {
    const raw = randomFile(dir, 'disk.raw', 3 * 1024 * 1024 + 17);
    for (const compression of ['gzip', 'zstd'] as const) {
      const repo = uniqueRepo(`raw-${compression}`);
      await pushDisk(raw, `${plain}/${repo}:1`, { insecure: true, compression, osDistro: 'debian' });
      const out = tempDir();
      await oras('pull', '--plain-http', '-o', out, `${plain}/${repo}:1`);
      // The layer oras pulled, decompressed by the reference tool of its format, is the disk byte for byte.
      const [pulledName, tool] = compression === 'gzip' ? ['disk.raw.gz', 'gzip'] : ['disk.raw.zst', 'zstd'];
      await run('bash', ['-c', `${tool} -dc '${join(out, pulledName)}' > '${join(out, 'decompressed')}'`]);
      expect(readFileSync(join(out, 'decompressed')).equals(readFileSync(raw)), `${pulledName} decompressed equals disk.raw`).toBe(true);
      const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: '1', insecure: true });
      expect(resolved).toMatchObject({ diskFormat: 'raw', compression, diskSize: 3 * 1024 * 1024 + 17, diskDigest: await sha256File(raw) });
      const got = await drain((await source.open(resolved)).stream);
      expect(got.error).toBeUndefined();
      expect(got.digest).toBe(await sha256File(raw));
    }
  });

  it('a plain `oras push` of a disk file (generic layer type, title only) is found and sniffed', async () => {
    const repo = uniqueRepo('oras-file');
    const img = join(dir, 'disk.img');
    await run('cp', [qcow2, img]);
    await run(process.env.SHELL ?? 'bash', ['-c', `cd '${dir}' && '${orasBin}' push --plain-http ${plain}/${repo}:latest disk.img`]);
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: 'latest', insecure: true });
    // .img names no format: the bytes do (pre-flight Range read).
    expect(resolved).toMatchObject({ packaging: 'oras-file', diskFormat: 'qcow2', formatDeclared: false });
    expect(resolved.blob.mediaType).toBe('application/vnd.oci.image.layer.v1.tar');
    const got = await drain((await source.open(resolved)).stream);
    expect(got.digest).toBe(await sha256File(qcow2));
  });

  it('`oras push --artifact-type` with a diskimage layer is our format; producers need no custom tooling', async () => {
    const repo = uniqueRepo('oras-artifact');
    await run('bash', ['-c', `cd '${dir}' && '${orasBin}' push --plain-http --artifact-type application/vnd.kupenstack.vmimage.v1 --annotation io.kupenstack.vmimage.os.distro=cirros ${plain}/${repo}:1 cirros.qcow2:application/vnd.diskimage.qcow2`]);
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: '1', insecure: true });
    expect(resolved).toMatchObject({ packaging: 'kupenstack-artifact', diskFormat: 'qcow2', properties: { os_distro: 'cirros' } });
  });

  it('`skopeo copy` of our artifact to another repository keeps the digest and still resolves', async () => {
    const from = uniqueRepo('skopeo-src');
    const to = uniqueRepo('skopeo-dst');
    const pushed = await pushDisk(qcow2, `${plain}/${from}:1`, { insecure: true, osDistro: 'cirros' });
    await skopeo('copy', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${plain}/${from}:1`, `docker://${plain}/${to}:copied`);
    const resolved = await source.resolve({ repository: `${plain}/${to}`, tag: 'copied', insecure: true });
    expect(resolved.manifestDigest).toBe(pushed.manifestDigest);
    expect((await drain((await source.open(resolved)).stream)).digest).toBe(await sha256File(qcow2));
  });

  it('a KubeVirt containerDisk (gzip tar layer with disk/disk.qcow2, uid 107) is untarred on the fly', async () => {
    const repo = uniqueRepo('containerdisk');
    const disk = readFileSync(qcow2);
    const tar = await tarWith([{ name: 'disk/disk.qcow2', data: disk }]);
    const layer = gzipSync(tar);
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [sha256Of(tar)] }, config: {} }));
    const c = client();
    const digest = await pushRaw(c, repo, 'v1', { config: { mediaType: 'application/vnd.oci.image.config.v1+json', data: config }, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', data: layer }] });
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: 'v1', insecure: true });
    expect(resolved).toMatchObject({ packaging: 'containerdisk', diskFormat: 'qcow2', manifestDigest: digest, formatDeclared: false });
    const opened = await source.open(resolved);
    const got = await drain(opened.stream);
    expect(got.error).toBeUndefined();
    expect(got.digest).toBe(sha256Of(disk));
    expect(opened.bytesFromRegistry()).toBe(layer.length);
  });

  it('a Docker schema2 containerDisk with the disk in a lower layer (uncompressed tar) is found, not down-converted', async () => {
    const repo = uniqueRepo('containerdisk-docker');
    const disk = readFileSync(qcow2);
    const lower = await tarWith([{ name: 'disk/disk.img', data: disk }]);
    const p = pack();
    p.entry({ name: 'etc/motd', size: 3 }, Buffer.from('hi\n'));
    p.finalize();
    const upperChunks: Buffer[] = [];
    for await (const ch of p as AsyncIterable<Buffer>) upperChunks.push(ch);
    const upper = Buffer.concat(upperChunks);
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [sha256Of(lower), sha256Of(upper)] } }));
    const c = client();
    const digest = await pushRaw(c, repo, 'v1', {
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', data: config },
      layers: [
        { mediaType: 'application/vnd.docker.image.rootfs.diff.tar', data: lower },
        { mediaType: 'application/vnd.docker.image.rootfs.diff.tar', data: upper },
      ],
    });
    const resolved = await source.resolve({ repository: `${plain}/${repo}`, tag: 'v1', insecure: true });
    expect(resolved.manifestDigest).toBe(digest);
    expect(resolved.packaging).toBe('containerdisk');
    expect((await drain((await source.open(resolved)).stream)).digest).toBe(sha256Of(disk));
  });

  it('a multi-arch index: linux/amd64 by default, arm64 on request, a missing platform named', async () => {
    const repo = uniqueRepo('multiarch');
    const c = client();
    const amd = randomFile(dir, 'amd64.raw', 200_000);
    const armDisk = readFileSync(qcow2);
    const amdDigest = (await pushDisk(amd, `${plain}/${repo}:amd64`, { insecure: true, arch: 'amd64' })).manifestDigest;
    const armDigest = await pushRaw(c, repo, 'arm64', { artifactType: 'application/vnd.kupenstack.vmimage.v1', layers: [{ mediaType: 'application/vnd.diskimage.qcow2', data: armDisk, annotations: { 'org.opencontainers.image.title': 'arm.qcow2' } }] });
    const size = async (tag: string): Promise<number> => (await headManifest(c, repo, tag))!.size;
    const index = {
      schemaVersion: 2,
      mediaType: ociIndex,
      artifactType: 'application/vnd.kupenstack.vmimage.v1',
      manifests: [
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: armDigest, size: await size('arm64'), platform: { os: 'linux', architecture: 'arm64' } },
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: amdDigest, size: await size('amd64'), platform: { os: 'linux', architecture: 'amd64' } },
      ],
    };
    const indexDigest = await putManifest(c, repo, 'multi', Buffer.from(JSON.stringify(index)), ociIndex);
    const def = await source.resolve({ repository: `${plain}/${repo}`, tag: 'multi', insecure: true });
    expect(def).toMatchObject({ manifestDigest: amdDigest, indexDigest, diskFormat: 'raw', platform: { architecture: 'amd64' } });
    const arm = await source.resolve({ repository: `${plain}/${repo}`, tag: 'multi', insecure: true, platform: { os: 'linux', architecture: 'arm64' } });
    expect(arm).toMatchObject({ manifestDigest: armDigest, diskFormat: 'qcow2', properties: { architecture: 'aarch64' } });
    expect((await drain((await source.open(arm)).stream)).digest).toBe(sha256Of(armDisk));
    await expect(source.resolve({ repository: `${plain}/${repo}`, tag: 'multi', insecure: true, platform: { architecture: 's390x' } })).rejects.toMatchObject({ code: 'oci.platform' });
  });

  it('semver picks the highest matching tag from 2.8’s unsorted, unpaginated list; a digest pin wins', async () => {
    const repo = uniqueRepo('semver');
    const small = randomFile(dir, 'small.raw', 70_000);
    const digests: Record<string, string> = {};
    for (const tag of ['1.2.0', 'v1.10.0', '1.9.3', '2.0.0-rc.1', 'latest', '0.9.0']) {
      digests[tag] = (await pushDisk(small, `${plain}/${repo}:${tag}`, { insecure: true, annotations: { 'org.opencontainers.image.version': tag } })).manifestDigest;
    }
    expect((await source.resolve({ repository: `${plain}/${repo}`, semver: '^1', insecure: true })).tag).toBe('v1.10.0');
    expect((await source.resolve({ repository: `${plain}/${repo}`, semver: '~1.9', insecure: true })).tag).toBe('1.9.3');
    expect((await source.resolve({ repository: `${plain}/${repo}`, semver: '>=2.0.0-rc.0', insecure: true })).tag).toBe('2.0.0-rc.1');
    await expect(source.resolve({ repository: `${plain}/${repo}`, semver: '^3', insecure: true })).rejects.toMatchObject({ code: 'oci.not-found' });
    const pinned = await source.resolve({ repository: `${plain}/${repo}`, semver: '^1', digest: digests['0.9.0']!, insecure: true });
    expect(pinned.manifestDigest).toBe(digests['0.9.0']);
    expect(pinned.tag).toBeUndefined();
  });

  it('`kupenstack image inspect -o json` shows the resolution; `image push` from the CLI', async () => {
    const repo = uniqueRepo('cli');
    const ref = `${plain}/${repo}:1`;
    const cli = join(import.meta.dirname, '../../../agent/cli/main.ts');
    const pushOut = await run(process.execPath, [cli, 'image', 'push', qcow2, ref, '--insecure', '--os-distro', 'cirros', '--arch', 'x86_64', '--annotation', 'io.kupenstack.vmimage.property.hw_vif_model=virtio']);
    expect(pushOut.stdout).toMatch(/pushed qcow2 disk/);
    expect(pushOut.stderr).toMatch(/push: /); // plain progress lines when not a TTY
    const { stdout } = await run(process.execPath, [cli, 'image', 'inspect', ref, '--insecure', '-o', 'json']);
    const doc = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual(expect.arrayContaining(['reference', 'digest', 'manifestDigest', 'format', 'diskFormat', 'size', 'annotations']));
    expect(doc).toMatchObject({ format: 'kupenstack-artifact', diskFormat: 'qcow2', size: readFileSync(qcow2).length, properties: { hw_vif_model: 'virtio', os_distro: 'cirros' } });
    // oras computes the digest itself: the same manifest.
    expect(doc.digest).toBe((await oras('resolve', '--plain-http', ref)).trim());
  });
});
