import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { peers } from '../support/peers.ts';
import { testCloudName } from '../support/context.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-client-'));
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup) await c();
  rmSync(dir, { recursive: true, force: true });
});

describe('the OpenStack client against the real Keystone', () => {
  it('reuses one token per scope instead of one per request, and counts calls by service, method and status', async () => {
    const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
    for (let i = 0; i < 5; i++) await cloud.client('network').get('/networks', { limit: 1 });
    await cloud.identity.find('/projects/does-not-exist');
    expect(cloud.counters.auth).toBe(1);
    expect(cloud.counters.sum((e) => e.service === 'network' && e.method === 'GET' && e.status === 200)).toBe(5);
    expect(cloud.counters.sum((e) => e.service === 'identity' && e.status === 404)).toBe(1);
  });

  it('logs in with an application credential; a wrong secret gets a clear error that does not contain it', async () => {
    const admin = OpenStackCloud.fromCloudsYaml(testCloudName);
    const me = await admin.whoami();
    const secret = randomBytes(16).toString('hex');
    const cred = await admin.identity.post<{ application_credential: { id: string } }>(`/users/${me.userId}/application_credentials`, { application_credential: { name: `ks-test-${secret.slice(0, 6)}`, secret } });
    cleanup.push(() => admin.identity.remove(`/users/${me.userId}/application_credentials/${cred.application_credential.id}`));
    const clouds = join(dir, 'clouds.yaml');
    const write = (s: string) =>
      writeFileSync(clouds, `clouds:\n  app:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: ${peers.keystone}\n      application_credential_id: ${cred.application_credential.id}\n      application_credential_secret: ${s}\n    region_name: ${peers.region}\n`);
    write(secret);
    const app = OpenStackCloud.fromCloudsYaml('app', clouds);
    expect((await app.whoami()).projectId).toBe(me.projectId);

    write('wrong-secret-value');
    const bad = OpenStackCloud.fromCloudsYaml('app', clouds);
    const err = await bad.whoami().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/refused the credentials of cloud "app"/);
    expect(err?.message).not.toContain('wrong-secret-value');
    expect(JSON.stringify(err)).not.toContain('wrong-secret-value');
  });
});
