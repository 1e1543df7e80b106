import { createHash, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import type { AdapterContext, Remote } from '../../../agent/kinds/kit/adapter.ts';
import { image } from '../../../agent/kinds/image/adapter.ts';
import { importDisk } from '../../../agent/glance/import.ts';
import { ociTransfers } from '../../../agent/glance/versions.ts';
import { diskSourceFor } from '../../../agent/glance/registry-source.ts';
import { ImageMemory } from '../../../agent/kinds/kit/image-memory.ts';
import { ociImageId, versionName } from '../../../agent/glance/version-rules.ts';
import type { Manifest } from '../../../agent/model/manifest.ts';
import { ownerTag } from '../../../agent/ownership/marker.ts';
import type { SecretName, SecretResolver } from '../../../agent/secrets/resolver.ts';
import { staticCredentials } from '../../../oci/auth/credentials.ts';
import type { DiskPackaging } from '../../../oci/disk-source.ts';
import { pushDisk } from '../../../oci/push.ts';
import { randomFile, registries, tempDir } from '../../support/oci.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { blobGets, pushDiskAs, qcow2Disk, registry, registryLog } from './image-oci-fixtures.ts';

let t: TestProject;
let flavorId = '';
const cleanup: (() => Promise<unknown>)[] = [];
const run = randomBytes(3).toString('hex');
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface RawImage extends Record<string, unknown> {
  id: string;
  name: string;
  status: string;
  size: number | null;
  tags: string[];
  os_hidden: boolean;
}

beforeAll(async () => {
  t = await testProject('image-oci');
  const admin = await t.cloud.adminCompute();
  const f = (await admin.post<{ flavor: { id: string } }>('/flavors', { flavor: { name: `oci-${t.ctx.owner}`, ram: 64, vcpus: 1, disk: 1, 'os-flavor-access:is_public': false } })).flavor;
  flavorId = f.id;
  cleanup.push(() => admin.remove(`/flavors/${f.id}`));
  await admin.post(`/flavors/${f.id}/action`, { addTenantAccess: { tenant: t.ctx.projectId } });
});

afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => undefined);
  for (const img of await allImages()) await t.ctx.apis.image.call('DELETE', `/images/${img.id}`, { ok: [204, 404] });
  await t.dispose();
});

async function allImages(): Promise<RawImage[]> {
  const q = { owner: t.ctx.projectId, visibility: 'all' };
  return [...(await t.ctx.apis.image.list<RawImage>('/images', 'images', q)), ...(await t.ctx.apis.image.list<RawImage>('/images', 'images', { ...q, os_hidden: true }))];
}

async function download(id: string): Promise<Buffer> {
  const token = await t.ctx.apis.image.session.token(t.ctx.apis.image.scope);
  const raw = await fetch(`${await t.ctx.apis.image.base()}/images/${id}/file`, { headers: { 'x-auth-token': token.value } });
  expect(raw.status).toBe(200);
  return Buffer.from(await raw.arrayBuffer());
}

/** Boots a server from the image (Nova's fake driver: ACTIVE is the proof Nova took the image). */
async function boot(imageId: string, name: string): Promise<string> {
  const s = await t.ctx.apis.compute.post<{ server: { id: string } }>('/servers', { server: { name, flavorRef: flavorId, imageRef: imageId, networks: 'none' } }, [202]);
  cleanup.push(() => t.ctx.apis.compute.remove(`/servers/${s.server.id}`));
  // honest: polling; the loop only ends by the return below or a throw
  for (let i = 0; i < 120; i++) {
    const got = await t.ctx.apis.compute.get<{ server: { status: string; image: { id: string } } }>(`/servers/${s.server.id}`);
    // honest: polling; the loop only ends by this return or a throw, so the expect always runs on success.
    if (got.server.status === 'ACTIVE') {
      expect(got.server.image.id).toBe(imageId);
      return s.server.id;
    }
    if (got.server.status === 'ERROR') throw new Error(`server ${s.server.id} went to ERROR`);
    await sleep(1000);
  }
  throw new Error('server not ACTIVE in time');
}

/** What the Image kind remembers between runs, as a front end owns it. */
let images = new ImageMemory();

/** The adapter context of one run: its own memo, as the engine makes one per run. */
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

/** The engine's steps for one manifest in one run: desired → create or update (+ the follow-up) → observe again. */
async function applyOne(m: Manifest): Promise<Remote> {
  const ctx = runCtx();
  const mine = async (): Promise<Remote | undefined> => (await image.observe(ctx)).find((r) => r.marker?.ref === `Image/${m.metadata.name}`);
  let remote = await mine();
  const desired = await image.desired(m, ctx);
  if (!remote) {
    remote = await image.create(ctx, m, desired, { owner: ctx.owner, ref: `Image/${m.metadata.name}`, specHash: replaceHash(image, desired) });
  }
  const diff = difference(image, desired, remote);
  expect(diff.replace).toBe(false);
  if (Object.keys(diff.updates).length > 0) await image.update(ctx, remote, diff.updates, m);
  const after = await mine();
  expect(after).toBeDefined();
  expect(difference(image, desired, after!).updates).toEqual({});
  return after!;
}

describe('OCI images in Glance', () => {
  const packagings: DiskPackaging[] = ['kupenstack-artifact', 'diskimage-artifact', 'oras-file', 'containerdisk'];
  for (const packaging of packagings) {
    it(`imports a ${packaging} with its bytes intact and boots a server from it`, async () => {
      const disk = qcow2Disk();
      const repo = `it/${packaging}-${run}`;
      const digest = await pushDiskAs(packaging, repo, 'v1', disk);
      const m = manifest('Image', `img-${packaging}`, t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'v1', insecure: true, sharing: 'private' } } });
      const remote = await applyOne(m);
      const raw = await t.ctx.apis.image.get<RawImage>(`/images/${remote.id}`);
      expect(raw).toMatchObject({ id: ociImageId(t.ctx.projectId, digest), status: 'active', disk_format: 'qcow2', container_format: 'bare', size: disk.length, name: `img-${packaging}`, os_hidden: false });
      expect(raw).toMatchObject({ oci_repository: `${registry}/${repo}`, oci_tag: 'v1', oci_manifest_digest: digest, kupenstack_owner: t.ctx.owner, kupenstack_ref: `Image/img-${packaging}` });
      expect([...raw.tags].sort()).toEqual(['oci-tag:v1', ownerTag(t.ctx.owner)].sort());
      expect(sha(await download(remote.id))).toBe(sha(disk));
      await boot(remote.id, `vm-${packaging}`);
    });
  }

  it('never transfers the same digest twice: a second import moves 0 blob bytes, and a manifest adopts an earlier CLI import', async () => {
    const disk = qcow2Disk();
    const repo = `it/dedupe-${run}`;
    const digest = await pushDiskAs('kupenstack-artifact', repo, 'v1', disk);
    const g = { image: t.ctx.apis.image, compute: t.ctx.apis.compute, projectId: t.ctx.projectId };
    const request = { repository: `${registry}/${repo}`, tag: 'v1', insecure: true };
    let log = blobGets(repo, statSync(registryLog()).size);
    const first = await importDisk(g, diskSourceFor(), request);
    expect(first).toMatchObject({ reused: false, manifestDigest: digest });
    expect(first.blobBytes).toBeGreaterThanOrEqual(disk.length);
    log = blobGets(repo, log.end);
    expect(log.count).toBeGreaterThanOrEqual(1);

    const second = await importDisk(g, diskSourceFor(), request);
    expect(second).toMatchObject({ reused: true, blobBytes: 0 });
    expect(second.image.id).toBe(first.image.id);
    // The registry saw no blob download (its own access log, not our counter); only
    // resolve's pre-flight read of the disk head (64 KiB) touches the blob.
    log = blobGets(repo, log.end);
    expect(log.count).toBe(0);
    expect(log.partialBytes).toBeLessThanOrEqual(64 * 1024);

    // An Image manifest following the same digest adopts the imported image: no download either.
    const bytes = ociTransfers.blobBytes;
    const remote = await applyOne(manifest('Image', 'adopter', t.ctx.namespace, { source: { oci: { ...request, sharing: 'private' } } }));
    expect(remote.id).toBe(first.image.id);
    expect(remote.marker).toMatchObject({ owner: t.ctx.owner, ref: 'Image/adopter' });
    expect(ociTransfers.blobBytes).toBe(bytes);
    expect(blobGets(repo, log.end).count).toBe(0);
    expect((await allImages()).filter((i) => i.oci_manifest_digest === digest)).toHaveLength(1);
  });

  it('moves the channel when the tag moves: a new image takes the name, the old one is hidden and kept; moving back downloads nothing', async () => {
    const repo = `it/move-${run}`;
    const d1 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    const m = manifest('Image', 'chan', t.ctx.namespace, { name: 'chan', source: { oci: { repository: `${registry}/${repo}`, tag: 'stable', insecure: true, sharing: 'private' } }, keep: 5 });
    const v1 = await applyOne(m);
    await boot(v1.id, 'vm-on-v1');

    const d2 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    expect(d2).not.toBe(d1);
    const desired = await image.desired(m, runCtx());
    expect(image.follows!(m, desired, v1)).toEqual({ reference: `${registry}/${repo}:stable`, from: d1, to: d2 });
    const v2 = await applyOne(m);
    expect(v2.id).not.toBe(v1.id);
    expect(v2.id).toBe(ociImageId(t.ctx.projectId, d2));
    let old = await t.ctx.apis.image.get<RawImage>(`/images/${v1.id}`);
    let next = await t.ctx.apis.image.get<RawImage>(`/images/${v2.id}`);
    expect(next).toMatchObject({ name: 'chan', os_hidden: false, status: 'active', oci_manifest_digest: d2 });
    expect(next.tags).toContain('oci-tag:stable');
    expect(old).toMatchObject({ name: versionName('chan', d1), os_hidden: true, status: 'active', oci_superseded_by: d2 });
    expect(old.tags).not.toContain('oci-tag:stable');
    expect(old.tags).toContain(ownerTag(t.ctx.owner));
    // One object per manifest for the engine, however many versions there are.
    expect((await image.observe(t.ctx)).filter((r) => r.marker?.ref === 'Image/chan').map((r) => r.id)).toEqual([v2.id]);

    // Back to the first digest: the old image is shown, renamed and tagged again, nothing downloaded.
    const bytes = ociTransfers.blobBytes;
    const log = statSync(registryLog()).size;
    const back = await retag(repo, 'stable', d1);
    expect(back).toBe(d1);
    const v1again = await applyOne(m);
    expect(v1again.id).toBe(v1.id);
    expect(ociTransfers.blobBytes).toBe(bytes);
    expect(blobGets(repo, log).count).toBe(0);
    old = await t.ctx.apis.image.get<RawImage>(`/images/${v1.id}`);
    next = await t.ctx.apis.image.get<RawImage>(`/images/${v2.id}`);
    expect(old).toMatchObject({ name: 'chan', os_hidden: false });
    expect(old.tags).toContain('oci-tag:stable');
    expect(old).not.toHaveProperty('oci_superseded_by');
    expect(next).toMatchObject({ name: versionName('chan', d2), os_hidden: true });
  });

  it('after a crash between promoting the new version and hiding the old one, the next run hides the old one', async () => {
    const repo = `it/crash-${run}`;
    const m = manifest('Image', 'crashy', t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'stable', insecure: true, sharing: 'private' } } });
    await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    const v1 = await applyOne(m);
    await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    const v2 = await applyOne(m);
    // The state a kill -9 right after promote() leaves: both shown, both tagged.
    const ops = [
      { op: 'replace', path: '/os_hidden', value: false },
      { op: 'replace', path: '/name', value: 'crashy' },
    ];
    await t.ctx.apis.image.call('PATCH', `/images/${v1.id}`, { body: Buffer.from(JSON.stringify(ops)), headers: { 'content-type': 'application/openstack-images-v2.1-json-patch' } });
    await t.ctx.apis.image.call('PUT', `/images/${v1.id}/tags/oci-tag:stable`, { ok: [204] });
    const seen = (await image.observe(runCtx())).find((r) => r.marker?.ref === 'Image/crashy')!;
    // The version promoted last stays current; the other is reported stale.
    expect(seen.id).toBe(v2.id);
    expect(seen.fields.stale_versions).toEqual([v1.id]);
    const healed = await applyOne(m);
    expect(healed.id).toBe(v2.id);
    const old = await t.ctx.apis.image.get<RawImage>(`/images/${v1.id}`);
    expect(old.os_hidden).toBe(true);
    expect(old.tags).not.toContain('oci-tag:stable');
  });

  it('with `interval`, asks the registry again only when the last answer is that old', async () => {
    const repo = `it/poll-${run}`;
    const d1 = await pushDiskAs('kupenstack-artifact', repo, 'edge', qcow2Disk());
    const m = manifest('Image', 'polled', t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'edge', insecure: true, sharing: 'private' } }, interval: '1h' });
    expect((await image.desired(m, runCtx())).digest).toBe(d1);
    const d2 = await pushDiskAs('kupenstack-artifact', repo, 'edge', qcow2Disk());
    // A later run within the hour: the remembered answer, no registry call.
    expect((await image.desired(m, runCtx())).digest).toBe(d1);
    // Without a policy the same tag is followed at once.
    const eager = manifest('Image', 'eager', t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'edge', insecure: true, sharing: 'private' } } });
    expect((await image.desired(eager, runCtx())).digest).toBe(d2);
    // The hour is over (the remembered time forgotten, as after it passed): the new digest.
    images = new ImageMemory();
    expect((await image.desired(m, runCtx())).digest).toBe(d2);
  });

  it('keeps `keep` versions: deletes only hidden, untagged, unprotected versions no server uses', async () => {
    const repo = `it/keep-${run}`;
    const m = manifest('Image', 'kept', t.ctx.namespace, { source: { oci: { repository: `${registry}/${repo}`, tag: 'rolling', insecure: true, sharing: 'private' } }, keep: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      await pushDiskAs('kupenstack-artifact', repo, 'rolling', qcow2Disk());
      ids.push((await applyOne(m)).id);
      // The first version stays in use by a server: retention must spare it.
      if (i === 0) await boot(ids[0]!, 'vm-keeps-v0');
    }
    const left = new Set((await allImages()).map((i) => i.id));
    // v3 current, v2 retained (keep 2), v0 in use; v1 deleted.
    expect(left.has(ids[3]!)).toBe(true);
    expect(left.has(ids[2]!)).toBe(true);
    expect(left.has(ids[0]!)).toBe(true);
    expect(left.has(ids[1]!)).toBe(false);
  });
});

/** Points `tag` at an existing manifest again (what `oras tag` does): fetch it by digest, put it under the tag. */
async function retag(repo: string, tag: string, digest: string): Promise<string> {
  const accept = 'application/vnd.oci.image.manifest.v1+json';
  const got = await fetch(`http://${registry}/v2/${repo}/manifests/${digest}`, { headers: { accept } });
  const body = Buffer.from(await got.arrayBuffer());
  const put = await fetch(`http://${registry}/v2/${repo}/manifests/${tag}`, { method: 'PUT', body, headers: { 'content-type': accept } });
  expect(put.status).toBe(201);
  return `sha256:${sha(body)}`;
}

describe('registry access of an Image', () => {
  it('a plain-HTTP registry without `insecure: true` is named, with the manifest field to set', async () => {
    const m = manifest('Image', 'plain-http', t.ctx.namespace, { source: { oci: { repository: `${registry}/it/plain-http-${run}`, tag: 'v1', sharing: 'private' } } });
    const err = await Promise.resolve(image.desired(m, runCtx())).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'oci.network', message: `${registry} answered in plain HTTP, not TLS; if this registry has no TLS, set insecure: true under spec.source.oci` });
  });

  it('credentialsSecretRef: the .dockerconfigjson Secret comes through the SecretResolver and reaches the registry', async () => {
    const basic = registries.basic;
    const repo = `kupenstack-test/secret-ref-${run}`;
    const file = randomFile(tempDir(), 'disk.raw', 64 * 1024);
    const pushed = await pushDisk(file, `${basic}/${repo}:1`, { insecure: true, credentials: staticCredentials(basic, { kind: 'basic', username: registries.user, password: registries.password }) });
    const spec = { source: { oci: { repository: `${basic}/${repo}`, tag: '1', insecure: true, credentialsSecretRef: { name: 'regcred' }, sharing: 'private' } } };
    const m = manifest('Image', 'secret-ref', t.ctx.namespace, spec);
    const dockerConfig = (password: string): string => JSON.stringify({ auths: { [basic]: { auth: Buffer.from(`${registries.user}:${password}`).toString('base64') } } });
    const asked: SecretName[] = [];
    const resolver = (password: string): SecretResolver => ({
      get: () => Promise.reject(new Error('getAll is used for a .dockerconfigjson')),
      getAll: (ref) => {
        asked.push(ref);
        return Promise.resolve({ '.dockerconfigjson': dockerConfig(password) });
      },
    });
    const ctx = (secrets?: SecretResolver) => ({ ...runCtx(), ...(secrets ? { secrets } : {}) });
    expect((await image.desired(m, ctx(resolver(registries.password)))).digest).toBe(pushed.manifestDigest);
    expect(asked).toEqual([{ name: 'regcred', namespace: t.ctx.namespace, key: '.dockerconfigjson' }]);
    // A wrong password in the Secret: the registry refuses it (a rotated Secret is read again, not cached).
    await expect(Promise.resolve(image.desired(m, ctx(resolver('wrong'))))).rejects.toMatchObject({ code: 'oci.auth' });
    // No resolver at all: said so, naming the Secret, never a value.
    await expect(Promise.resolve(image.desired(m, ctx()))).rejects.toMatchObject({ code: 'image.oci-credentials', message: expect.stringContaining(`Secret ${t.ctx.namespace}/regcred key .dockerconfigjson`) as unknown });
  });
});
