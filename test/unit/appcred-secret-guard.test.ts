import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeGeneration } from '../../agent/kinds/applicationcredential/make.ts';
import type { AdapterContext } from '../../agent/kinds/kit/adapter.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { acceptCredentialsAnnotation, KubeSecretWriteError, KubeSecretWriter, secretOwnerLabel } from '../../agent/secrets/kube-writer.ts';
import type { SecretWriter } from '../../agent/secrets/resolver.ts';

/*
 * The ApplicationCredential confused-deputy guard, in the unit project (test/integration/controller/appcred-secret.test.ts
 * runs it against the real API server and Keystone): a tenant names the Secret, the controller writes it, so
 * a Secret KupenStack did not make and nobody opted in is refused, before Keystone is touched. One loopback
 * listener plays the API server (Secrets and SelfSubjectAccessReviews), another Keystone; both record what arrives.
 */
const kubeSeen: string[] = [];
/** The Secrets the fake API server holds, by name. */
const secrets = new Map<string, k8s.V1Secret>();
const keystoneSeen: string[] = [];
let kube: Server;
let keystone: Server;
let keystoneBase = '';

beforeAll(async () => {
  kube = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      kubeSeen.push(`${req.method} ${req.url?.split('?')[0]}`);
      const json = (status: number, value: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.url?.includes('selfsubjectaccessreviews')) return json(201, { ...(JSON.parse(body) as object), status: { allowed: true } });
      const name = /\/secrets\/([^/?]+)/.exec(req.url ?? '')?.[1];
      if (req.method === 'GET') {
        const s = name ? secrets.get(name) : undefined;
        return s ? json(200, s) : json(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 });
      }
      const written = JSON.parse(body) as k8s.V1Secret;
      secrets.set(written.metadata!.name!, written);
      return json(req.method === 'POST' ? 201 : 200, written);
    });
  });
  keystone = createServer((req, res) => {
    req.resume();
    keystoneSeen.push(`${req.method} ${req.url}`);
    if (req.url === '/v3/auth/tokens') {
      const catalog = ['identity', 'compute', 'network', 'image', 'volumev3'].map((type) => ({ type, endpoints: [{ interface: 'public', url: `${keystoneBase}/${type}` }] }));
      res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': 'token' });
      return void res.end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString(), user: { id: 'u' }, catalog } }));
    }
    // Nova's version document (the client asks it for the microversion); everything else fails.
    if (req.url === '/compute/v2.1') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":{"id":"v2.1","version":"2.90","min_version":"2.1"}}');
    res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"the test Keystone makes nothing"}}');
  });
  await new Promise<void>((r) => kube.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => keystone.listen(0, '127.0.0.1', r));
  keystoneBase = `http://127.0.0.1:${(keystone.address() as AddressInfo).port}`;
});
afterAll(() => {
  kube.closeAllConnections();
  kube.close();
  keystone.closeAllConnections();
  keystone.close();
});

function writer(): KubeSecretWriter {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    // Plain HTTP on loopback: there is no TLS to verify.
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(kube.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'controller', token: 'controller-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'controller' }],
    currentContext: 'ctx',
  });
  return new KubeSecretWriter(kc);
}

const place = (name: string) => ({ namespace: 'team-a', name });
const secret = (name: string, labels: Record<string, string>, annotations: Record<string, string> = {}): k8s.V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: 'team-a', labels, annotations, resourceVersion: '7' },
  data: { keep: Buffer.from('db password').toString('base64') },
});

describe('KubeSecretWriter: a Secret KupenStack did not make is refused unless opted in', () => {
  it('put refuses a foreign Secret, naming the opt-in, and writes nothing; check refuses it before asking for access', async () => {
    secrets.set('db', secret('db', { app: 'db' }));
    kubeSeen.length = 0;
    const put = await writer().put(place('db'), { clouds: 'x' }, 'o1').catch((e: unknown) => e);
    expect(put).toBeInstanceOf(KubeSecretWriteError);
    expect((put as Error).message).toContain(`kubectl annotate secret db -n team-a ${acceptCredentialsAnnotation}=true`);
    const check = await writer().check(place('db'), 'o1').catch((e: unknown) => e);
    expect(check).toBeInstanceOf(KubeSecretWriteError);
    expect(kubeSeen).toEqual(['GET /api/v1/namespaces/team-a/secrets/db', 'GET /api/v1/namespaces/team-a/secrets/db']);
    expect(Object.keys(secrets.get('db')!.data!)).toEqual(['keep']);
  });

  it("another owner's Secret is foreign too", async () => {
    secrets.set('theirs', secret('theirs', { [secretOwnerLabel]: 'o2' }));
    await expect(writer().put(place('theirs'), { clouds: 'x' }, 'o1')).rejects.toBeInstanceOf(KubeSecretWriteError);
    expect(Object.keys(secrets.get('theirs')!.data!)).toEqual(['keep']);
  });

  it('writes its own Secret, an opted-in one (keeping its keys), and makes a missing one marked as its own', async () => {
    secrets.set('mine', secret('mine', { [secretOwnerLabel]: 'o1' }));
    secrets.set('opted', secret('opted', { app: 'x' }, { [acceptCredentialsAnnotation]: 'true' }));
    secrets.delete('new');
    const w = writer();
    for (const name of ['mine', 'opted', 'new']) {
      await w.check(place(name), 'o1');
      await w.put(place(name), { clouds: 'x' }, 'o1');
    }
    expect(Object.keys(secrets.get('mine')!.data!).sort()).toEqual(['clouds', 'keep']);
    expect(Object.keys(secrets.get('opted')!.data!).sort()).toEqual(['clouds', 'keep']);
    expect(secrets.get('new')!.metadata!.labels).toMatchObject({ [secretOwnerLabel]: 'o1' });
  });
});

describe('makeGeneration: the Secret is checked before Keystone is touched', () => {
  it('a refused Secret makes no service user and no credential: nothing reaches Keystone', async () => {
    const cloud = new OpenStackCloud({ name: 'unit', file: 'clouds.yaml', authUrl: `${keystoneBase}/v3`, credentials: { type: 'password', username: 'u', password: 'p' }, interface: 'public', verify: true });
    const refusal = new KubeSecretWriteError('Secret team-a/db exists and KupenStack did not make it');
    const refusing: SecretWriter = {
      read: () => Promise.resolve(undefined),
      check: () => Promise.reject(refusal),
      put: () => Promise.reject(refusal),
      owned: () => Promise.resolve(false),
      removeOwned: () => Promise.resolve(),
    };
    const ctx: AdapterContext = {
      cloud,
      apis: await cloud.forProject('p1'),
      namespace: 'team-a',
      projectId: 'p1',
      projectName: 'kst-team-a',
      owner: 'o1',
      idOf: () => 'id',
      memo: (_key, load) => load(),
      secrets: { get: () => Promise.reject(new Error('no secret is read')), writer: refusing },
    };
    const m = {
      apiVersion: 'kupenstack.io/v1alpha1',
      kind: 'ApplicationCredential',
      metadata: { name: 'ccm', namespace: 'team-a' },
      spec: { roles: ['member'], secretRef: { name: 'db' } },
      source: { file: 'a.yaml', index: 0 },
      address: 'team-a/ApplicationCredential/ccm',
    } as unknown as Manifest;
    keystoneSeen.length = 0;
    await expect(makeGeneration(ctx, m, { owner: 'o1', ref: 'ApplicationCredential/ccm', specHash: '00000000' }, Date.now())).rejects.toBe(refusal);
    expect(keystoneSeen).toEqual([]);
  });
});
