import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DockerConfigCredentials } from '../../../oci/auth/docker-config.ts';
import { staticCredentials } from '../../../oci/auth/credentials.ts';
import { RegistryClient } from '../../../oci/client.ts';
import { pushDisk } from '../../../oci/push.ts';
import { RegistryDiskSource } from '../../../oci/registry-disk-source.ts';
import { fetchManifest } from '../../../oci/manifest.ts';
import { uploadBuffer } from '../../../oci/upload.ts';
import { FaultProxy } from '../../support/fault-proxy.ts';
import { drain, randomFile, registries, sha256File, tempDir, uniqueRepo } from '../../support/oci.ts';

const { basic, bearer, user, password } = registries;

function dockerConfig(dir: string, name: string, auths: Record<string, unknown>): DockerConfigCredentials {
  const f = join(dir, name);
  writeFileSync(f, JSON.stringify({ auths }));
  return DockerConfigCredentials.fromFile(f);
}

async function issued(): Promise<Array<{ subject: string; scopes: string[] }>> {
  const res = await fetch(`${registries.tokenServer}/stats`);
  return ((await res.json()) as { issued: Array<{ subject: string; scopes: string[] }> }).issued;
}

async function errorOf(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('expected a failure');
}

describe('registry authentication', () => {
  let dir: string;
  let disk: string;
  let good: DockerConfigCredentials;
  const wrongPassword = 'wrong-secret-must-not-leak-7f3a';

  beforeAll(() => {
    dir = tempDir();
    disk = randomFile(dir, 'disk.raw', 300_000);
    good = dockerConfig(dir, 'good.json', {
      [basic]: { auth: Buffer.from(`${user}:${password}`).toString('base64') },
      [`https://${bearer}`]: { username: user, password },
    });
  });

  it('Basic (5051): push and pull with credentials from a docker config file', async () => {
    const repo = uniqueRepo('basic');
    const pushed = await pushDisk(disk, `${basic}/${repo}:1`, { insecure: true, credentials: good });
    const source = new RegistryDiskSource({ credentials: good });
    const resolved = await source.resolve({ repository: `${basic}/${repo}`, tag: '1', insecure: true });
    expect(resolved.manifestDigest).toBe(pushed.manifestDigest);
    expect((await drain((await source.open(resolved)).stream)).digest).toBe(await sha256File(disk));
  });

  it('Basic: a wrong password and no credentials are clear auth errors without the secret', async () => {
    const repo = uniqueRepo('basic-wrong');
    await pushDisk(disk, `${basic}/${repo}:1`, { insecure: true, credentials: good });
    const bad = dockerConfig(dir, 'bad-basic.json', { [basic]: { username: user, password: wrongPassword } });
    const e1 = await errorOf(new RegistryDiskSource({ credentials: bad }).resolve({ repository: `${basic}/${repo}`, tag: '1', insecure: true }));
    expect(e1.code).toBe('oci.auth');
    expect(e1.message).toMatch(/even after authenticating/);
    expect(e1.message).not.toContain(wrongPassword);
    expect(e1.message).not.toContain(Buffer.from(`${user}:${wrongPassword}`).toString('base64'));
    const e2 = await errorOf(new RegistryDiskSource().resolve({ repository: `${basic}/${repo}`, tag: '1', insecure: true }));
    expect(e2.code).toBe('oci.auth');
    expect(e2.message).toMatch(/requires a username and password/);
  });

  it('Bearer (5052): anonymous → token flow with the config credentials; push upgrades a pull token to pull,push', async () => {
    const repo = uniqueRepo('bearer');
    const before = (await issued()).length;
    const c = new RegistryClient({ registry: bearer, insecure: true, credentials: good });
    // A pull first: the token is for pull only …
    await expect(fetchManifest(c, repo, 'missing')).rejects.toMatchObject({ code: 'oci.not-found' });
    // … then a push on the same client: the registry answers insufficient_scope, the client asks for pull,push.
    await uploadBuffer(c, repo, Buffer.from(`blob for ${repo}`));
    const mine = (await issued()).slice(before).filter((t) => t.scopes.some((s) => s.includes(repo)));
    expect(mine.map((t) => t.scopes)).toEqual([[`repository:${repo}:pull`], [`repository:${repo}:pull,push`]]);
    expect(mine.every((t) => t.subject === user)).toBe(true);

    const pushed = await pushDisk(disk, `${bearer}/${repo}:1`, { insecure: true, credentials: good });
    const source = new RegistryDiskSource({ credentials: good });
    const resolved = await source.resolve({ repository: `${bearer}/${repo}`, tag: '1', insecure: true });
    expect(resolved.manifestDigest).toBe(pushed.manifestDigest);
    expect((await drain((await source.open(resolved)).stream)).digest).toBe(await sha256File(disk));
    // One token per scope set: resolve and open reused it.
    const afterPull = (await issued()).slice(before).filter((t) => t.scopes.includes(`repository:${repo}:pull`));
    expect(afterPull.length).toBe(2); // the first client's and this source's
  });

  it('Bearer: an identity token (OAuth2 refresh_token POST) works', async () => {
    const repo = uniqueRepo('bearer-identity');
    const creds = staticCredentials(bearer, { kind: 'identity-token', username: '<token>', token: registries.identityToken });
    const pushed = await pushDisk(disk, `${bearer}/${repo}:1`, { insecure: true, credentials: creds });
    const resolved = await new RegistryDiskSource({ credentials: creds }).resolve({ repository: `${bearer}/${repo}`, tag: '1', insecure: true });
    expect(resolved.manifestDigest).toBe(pushed.manifestDigest);
  });

  it('Bearer: wrong credentials and anonymous access are auth errors that name the fix, not the secret', async () => {
    const repo = uniqueRepo('bearer-wrong');
    await pushDisk(disk, `${bearer}/${repo}:1`, { insecure: true, credentials: good });
    const bad = dockerConfig(dir, 'bad-bearer.json', { [bearer]: { auth: Buffer.from(`${user}:${wrongPassword}`).toString('base64') } });
    const e1 = await errorOf(new RegistryDiskSource({ credentials: bad }).resolve({ repository: `${bearer}/${repo}`, tag: '1', insecure: true }));
    expect(e1).toMatchObject({ code: 'oci.auth' });
    expect(e1.message).toMatch(/refused the credentials/);
    expect(e1.message).not.toContain(wrongPassword);
    const e2 = await errorOf(new RegistryDiskSource().resolve({ repository: `${bearer}/${repo}`, tag: '1', insecure: true }));
    expect(e2).toMatchObject({ code: 'oci.auth' });
    expect(e2.message).toMatch(/refused anonymous/);
  });

  describe('through a proxy', () => {
    let proxy: FaultProxy | undefined;
    afterEach(async () => {
      await proxy?.stop();
      proxy = undefined;
    });

    it('a blob redirect to another origin is followed without the Authorization header', async () => {
      const repo = uniqueRepo('redirect');
      await pushDisk(disk, `${basic}/${repo}:1`, { insecure: true, credentials: good });
      proxy = await new FaultProxy(basic).start();
      // The other origin stands for blob storage (S3, a CDN): it brings its own access, like a signed URL.
      proxy.otherOriginHeaders = { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` };
      proxy.rules = [{ method: 'GET', path: /\/blobs\/sha256:/, fault: { kind: 'redirect-other-origin' } }];
      const creds = staticCredentials(proxy.address, { kind: 'basic', username: user, password });
      const source = new RegistryDiskSource({ credentials: creds });
      const resolved = await source.resolve({ repository: `${proxy.address}/${repo}`, tag: '1', insecure: true });
      expect((await drain((await source.open(resolved)).stream)).digest).toBe(await sha256File(disk));
      const main = proxy.seen.filter((s) => s.listener === 'main' && s.path.includes('/manifests/'));
      const other = proxy.seen.filter((s) => s.listener === 'other');
      expect(main.some((s) => s.headers.authorization?.startsWith('Basic '))).toBe(true);
      expect(other.length).toBeGreaterThanOrEqual(2); // pre-flight range read + the download
      for (const s of other) expect(s.headers.authorization).toBeUndefined();
    });
  });
});
