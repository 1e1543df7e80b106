import { execFile } from 'node:child_process';
import { createReadStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importDisk } from '../../../agent/glance/import.ts';
import { diskSourceFor } from '../../../agent/glance/registry-source.ts';
import { putImageData } from '../../../agent/glance/image-api.ts';
import { RegistryDiskSource } from '../../../oci/registry-disk-source.ts';
import { testProject, type TestProject } from '../../support/context.ts';
import { oras, qemuImg, registries, sha256File, tempDir, uniqueRepo } from '../../support/oci.ts';

/**
 * `kupenstack image export`, run as a user runs it: a Glance image goes to
 * the test bed's registry as a KupenStack disk artifact; `oras pull` gives
 * the very bytes Glance holds; importing it into another project gives an
 * image with the same data (Glance's own hashes) and the same manifest digest.
 */

const run = promisify(execFile);
const registry = registries.plain;
let a: TestProject;
let b: TestProject;
let dir = '';
let qcow2 = '';
let imageId = '';

interface Glance {
  id: string;
  status: string;
  checksum: string;
  os_hash_value: string;
  size: number;
  [k: string]: unknown;
}

beforeAll(async () => {
  [a, b] = await Promise.all([testProject('rh-export-a'), testProject('rh-export-b')]);
  dir = tempDir();
  qcow2 = join(dir, 'disk.qcow2');
  await qemuImg('create', '-q', '-f', 'qcow2', qcow2, '256M');
  await qemuImg('bench', '-q', '-w', '-c', '64', '-s', '65536', '-f', 'qcow2', qcow2);
  expect(statSync(qcow2).size).toBeGreaterThan(4 * 1024 * 1024);
  // A Glance image made as an operator makes one: its data and a few properties.
  const created = await a.ctx.apis.image.call<Glance>('POST', '/images', { json: { name: 'registry-hooks-export', disk_format: 'qcow2', container_format: 'bare', os_distro: 'cirros', os_version: '0.6.2', hw_disk_bus: 'virtio', min_ram: 64 } });
  imageId = created.body.id;
  await putImageData(a.ctx.apis.image, imageId, createReadStream(qcow2), { timeoutMs: 60_000 });
}, 180_000);

afterAll(async () => {
  for (const t of [a, b]) {
    if (!t) continue;
    for (const img of await t.ctx.apis.image.list<{ id: string }>('/images', 'images', { owner: t.ctx.projectId })) await t.ctx.apis.image.remove(`/images/${img.id}`);
    await t.dispose();
  }
}, 120_000);

describe('kupenstack image export', () => {
  it('streams a Glance image to a registry: oras pulls the same bytes, and an import into another project keeps the digest', async () => {
    const glance = (await a.ctx.apis.image.call<Glance>('GET', `/images/${imageId}`)).body;
    expect(glance.status).toBe('active');
    const repo = uniqueRepo('registry-hooks-export');
    const ref = `${registry}/${repo}:exported`;
    const { stdout } = await run(process.execPath, ['agent/cli/main.ts', 'image', 'export', 'registry-hooks-export', ref, '--cloud', 'kupenstack-local', '--project', a.ctx.projectId, '--insecure', '-o', 'json'], { maxBuffer: 1 << 20 });
    const result = JSON.parse(stdout) as { manifestDigest: string; diskFormat: string; layer: { digest: string; size: number }; verified: string[] };
    // Glance's multihash is checked; its md5 `checksum` only where it kept no multihash (images from before Rocky).
    expect(result.verified).toEqual(['os_hash_value (sha512)']);
    expect(result.diskFormat).toBe('qcow2');
    expect(result.layer.digest).toBe(await sha256File(qcow2));

    // oras, as another tool: the same bytes, named as the image, with the artifact type `image push` uses.
    const out = tempDir();
    await oras('pull', '--plain-http', '-o', out, ref);
    expect(await sha256File(join(out, 'registry-hooks-export.qcow2'))).toBe(await sha256File(qcow2));
    const manifest = JSON.parse(await oras('manifest', 'fetch', '--plain-http', ref)) as { artifactType: string; layers: { mediaType: string }[]; annotations: Record<string, string> };
    expect(manifest.artifactType).toBe('application/vnd.kupenstack.vmimage.v1');
    expect(manifest.layers.map((l) => l.mediaType)).toEqual(['application/vnd.diskimage.qcow2']);
    expect(manifest.annotations).toMatchObject({
      'io.kupenstack.vmimage.disk.format': 'qcow2',
      'io.kupenstack.vmimage.disk.virtual-size': String(256 * 1024 * 1024),
      'io.kupenstack.vmimage.os.distro': 'cirros',
      'io.kupenstack.vmimage.os.version': '0.6.2',
      'io.kupenstack.vmimage.min-ram-mb': '64',
      'io.kupenstack.vmimage.property.hw_disk_bus': 'virtio',
    });
    expect(Object.keys(manifest.annotations).filter((k) => /os_hash|checksum|owner|kupenstack_/.test(k))).toEqual([]);

    // Round trip: import into another project.
    const imported = await importDisk({ image: b.ctx.apis.image, projectId: b.ctx.projectId }, diskSourceFor(), { repository: `${registry}/${repo}`, tag: 'exported', insecure: true }, { allowedProperties: ['os_distro', 'os_version', 'hw_disk_bus'] });
    expect(imported.manifestDigest).toBe(result.manifestDigest);
    const copy = (await b.ctx.apis.image.call<Glance>('GET', `/images/${imported.image.id}`)).body;
    expect({ status: copy.status, checksum: copy.checksum, os_hash_value: copy.os_hash_value, size: copy.size }).toEqual({ status: 'active', checksum: glance.checksum, os_hash_value: glance.os_hash_value, size: glance.size });
    expect(copy).toMatchObject({ os_distro: 'cirros', os_version: '0.6.2', hw_disk_bus: 'virtio', oci_manifest_digest: result.manifestDigest });
  });

  it('data that no longer matches Glance\'s hashes is refused and nothing is tagged', async () => {
    // A second image, its stored data then rotted in Glance's file store (the same size): Glance serves it unverified.
    const created = await a.ctx.apis.image.call<Glance>('POST', '/images', { json: { name: 'registry-hooks-rotten', disk_format: 'qcow2', container_format: 'bare' } });
    await putImageData(a.ctx.apis.image, created.body.id, createReadStream(qcow2), { timeoutMs: 60_000 });
    const stored = join(process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed', 'openstack', 'glance', 'images', created.body.id);
    const data = readFileSync(stored);
    const at = data.length - 1000;
    data[at] = data[at]! ^ 0xff;
    writeFileSync(stored, data);
    const repo = uniqueRepo('registry-hooks-rotten');
    const failed = await run(process.execPath, ['agent/cli/main.ts', 'image', 'export', created.body.id, `${registry}/${repo}:rotten`, '--cloud', 'kupenstack-local', '--project', a.ctx.projectId, '--insecure', '-o', 'json']).then(
      () => undefined,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toMatch(/does not match its os_hash_value \(sha512\)/);
    // The registry has no such tag: nothing was tagged.
    const manifest = await fetch(`http://${registry}/v2/${repo}/manifests/rotten`, { method: 'HEAD', headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } });
    expect(manifest.status).toBe(404);
  });

  it('a tag poll of a known digest reads no blob (the sniffed format is remembered)', async () => {
    const repo = uniqueRepo('registry-hooks-poll');
    const ref = `${registry}/${repo}:polled`;
    await run(process.execPath, ['agent/cli/main.ts', 'image', 'export', imageId, ref, '--cloud', 'kupenstack-local', '--project', a.ctx.projectId, '--insecure', '-o', 'json']);
    const source = new RegistryDiskSource();
    const request = { repository: `${registry}/${repo}`, tag: 'polled', insecure: true };
    const first = await source.resolve(request);
    const afterFirst = source.requests();
    expect(afterFirst.blobs).toBe(1); // the Range read of the disk's first 64 KiB
    const again = await source.resolve(request);
    const afterSecond = source.requests();
    expect(again.manifestDigest).toBe(first.manifestDigest);
    expect(again.diskFormat).toBe('qcow2');
    expect(afterSecond.all).toBeGreaterThan(afterFirst.all); // the tag was asked again
    expect(afterSecond.blobs).toBe(afterFirst.blobs);
    // The registry's own access log agrees: one partial blob GET for this repository, not two.
    const log = readFileSync(join(process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed', 'registry', 'log', 'registry.log'), 'latin1');
    const blobGets = [...log.matchAll(new RegExp(`"GET /v2/${repo.replace(/[/.-]/g, '\\$&')}/blobs/sha256:[0-9a-f]{64} HTTP/1.1" 20[06]`, 'g'))];
    expect(blobGets).toHaveLength(1);
  });
});
