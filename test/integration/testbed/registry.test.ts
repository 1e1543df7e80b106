import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { peers } from '../../support/peers.ts';

const sha256 = (b: Uint8Array | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const manifestTypes = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

async function pushBlob(base: string, repo: string, bytes: Uint8Array): Promise<string> {
  const digest = sha256(bytes);
  // Distribution 2.8 has no single-POST upload: open a session, then PUT the bytes.
  const session = await fetch(`${base}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  expect(session.status).toBe(202);
  const location = new URL(session.headers.get('location')!, base);
  location.searchParams.set('digest', digest);
  const res = await fetch(location, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
  expect(res.status).toBe(201);
  expect(res.headers.get('docker-content-digest')).toBe(digest);
  return digest;
}

describe('the test-bed OCI registry', () => {
  it('stores a blob and a manifest pushed by tag and serves them back by digest', async () => {
    const base = peers.registry;
    const repo = `smoke/disk-${Date.now()}`;
    const disk = randomBytes(256 * 1024);
    const layer = await pushBlob(base, repo, disk);
    const config = await pushBlob(base, repo, new TextEncoder().encode('{}'));
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      artifactType: 'application/vnd.kupenstack.vmimage.v1',
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: config, size: 2 },
      layers: [{ mediaType: 'application/vnd.diskimage.raw', digest: layer, size: disk.length }],
    });
    const put = await fetch(`${base}/v2/${repo}/manifests/v1`, { method: 'PUT', headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' }, body: manifest });
    expect(put.status).toBe(201);
    expect(put.headers.get('docker-content-digest')).toBe(sha256(manifest));

    const got = await fetch(`${base}/v2/${repo}/manifests/v1`, { headers: { accept: manifestTypes } });
    expect(got.status).toBe(200);
    const text = await got.text();
    expect(sha256(text)).toBe(sha256(manifest));
    const blob = Buffer.from(await (await fetch(`${base}/v2/${repo}/blobs/${layer}`)).arrayBuffer());
    expect(blob.equals(disk)).toBe(true);
    const tags = (await (await fetch(`${base}/v2/${repo}/tags/list`)).json()) as { tags: string[] };
    expect(tags.tags).toEqual(['v1']);
    // Deletes are enabled: an image version can be removed by digest.
    expect((await fetch(`${base}/v2/${repo}/manifests/${sha256(manifest)}`, { method: 'DELETE' })).status).toBe(202);
  });

  it('asks for credentials on the authenticated registry and accepts the right ones only', async () => {
    const { url, user, password } = peers.registryAuth;
    expect((await fetch(`${url}/v2/`)).status).toBe(401);
    const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
    expect((await fetch(`${url}/v2/`, { headers: { authorization: basic(user, 'wrong') } })).status).toBe(401);
    expect((await fetch(`${url}/v2/`, { headers: { authorization: basic(user, password) } })).status).toBe(200);
  });
});
