import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { cloudFromSecret } from '../../../agent/controller/clouds/cloud-from-secret.ts';
import { CloudHealth } from '../../../agent/controller/clouds/cloud-health.ts';
import { probeCloud } from '../../../agent/controller/clouds/cloud-probe.ts';
import { CloudConnections } from '../../../agent/controller/clouds/connections.ts';
import { CloudUnreachableError, cloudLabel, connectionOf, sourceOf } from '../../../agent/kinds/openstackcloudconnection/index.ts';
import { KubeSecretNotFoundError } from '../../../agent/secrets/kubernetes.ts';
import type { SecretResolver } from '../../../agent/secrets/resolver.ts';

/**
 * Several clouds in one controller (issue 48 part 2), without a cluster: which connection a namespace's
 * labels pick, where a connection's clouds.yaml comes from, one OpenStack client per connection (its own
 * tokens), the health that keeps a cloud that is down from taking workers, and the probe's verdicts
 * against a loopback Keystone (answering, refusing the credentials, gone, without the region).
 */
let keystone: Server;
let base: string;
let refuseCredentials = false;
const tokenRequests: string[] = [];

beforeAll(async () => {
  keystone = createServer((req, res) => {
    req.resume();
    if (req.method === 'POST' && req.url === '/v3/auth/tokens') {
      tokenRequests.push(req.url);
      if (refuseCredentials) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"The request you have made requires authentication."}}');
      const catalog = [{ type: 'identity', endpoints: [{ interface: 'public', region: 'RegionOne', region_id: 'RegionOne', url: `${base}/v3` }] }];
      res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': `t${tokenRequests.length}` });
      return void res.end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString(), user: { id: 'u' }, catalog } }));
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":{"id":"v3.14"}}');
  });
  await new Promise<void>((resolve) => keystone.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(keystone.address() as AddressInfo).port}`;
});
afterAll(() => {
  keystone.closeAllConnections();
  keystone.close();
});

const cloudsYaml = (authUrl: string, password = 'unit-password'): string =>
  stringify({ clouds: { lab: { auth: { auth_url: authUrl, username: 'admin', password, project_name: 'admin', user_domain_name: 'Default' }, region_name: 'RegionOne' } } });

/** A resolver serving one clouds.yaml per Secret name, changeable between reads. */
function secrets(texts: Map<string, string>): SecretResolver {
  return { get: (ref) => Promise.resolve(texts.get(ref.name ?? '') ?? '') };
}

describe("a namespace's connection", () => {
  it('is the value of its kupenstack.io/cloud label; none (or empty) is the default cloud', () => {
    expect(cloudLabel).toBe('kupenstack.io/cloud');
    expect(connectionOf({ [cloudLabel]: 'region-two', 'kupenstack.io/project': 'enabled' })).toBe('region-two');
    expect(connectionOf({ 'kupenstack.io/project': 'enabled' })).toBeUndefined();
    expect(connectionOf({ [cloudLabel]: '' })).toBeUndefined();
    expect(connectionOf(undefined)).toBeUndefined();
  });

  it("reads its clouds.yaml from its secretRef (key clouds.yaml unless given), or from an OpenStackCloud's install once it wrote one", () => {
    const none = (): undefined => undefined;
    expect(sourceOf({ secretRef: { namespace: 'ops', name: 'two' }, cloud: 'lab', region: 'RegionTwo' }, none)).toEqual({
      secret: { namespace: 'ops', name: 'two', key: 'clouds.yaml' },
      cloud: 'lab',
      region: 'RegionTwo',
    });
    expect(sourceOf({ openStackCloudRef: { name: 'lab' } }, none)).toMatch(/^OpenStackCloud lab has not written its clouds.yaml Secret yet/);
    const installed = { namespace: 'openstack', name: 'kupenstack-cloud-lab-clouds-yaml', key: 'clouds.yaml', cloud: 'lab' };
    expect(sourceOf({ openStackCloudRef: { name: 'lab' } }, (n) => (n === 'lab' ? installed : undefined))).toEqual({
      secret: { namespace: 'openstack', name: 'kupenstack-cloud-lab-clouds-yaml', key: 'clouds.yaml' },
      cloud: 'lab',
    });
  });

  it('named but not there: the run is refused without a call, naming the connection', async () => {
    // A kubeconfig no request is made with: the connections were never listed.
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
    const connections = new CloudConnections({ kc, secrets: secrets(new Map()), log: () => undefined, acting: () => true, onUp: () => undefined, onDown: () => undefined });
    const err = await connections.cloudOf('nowhere').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudUnreachableError);
    expect(err).toMatchObject({ connection: 'nowhere', reason: 'NoSuchConnection' });
    expect((err as Error).message).toContain('no OpenStackCloudConnection named nowhere');
  });
});

describe('one OpenStack client per connection', () => {
  it('two connections of one clouds.yaml are two clients (own tokens, own region); one Secret unchanged keeps its client, rotated gives a new one', async () => {
    const texts = new Map([['one', cloudsYaml(`${base}/v3`)]]);
    const a = cloudFromSecret(secrets(texts), { namespace: 'ops', name: 'one', key: 'clouds.yaml' }, 'lab');
    const b = cloudFromSecret(secrets(texts), { namespace: 'ops', name: 'one', key: 'clouds.yaml' }, 'lab', undefined, 'RegionTwo');
    const [cloudA, cloudB] = [await a(), await b()];
    expect(cloudA).not.toBe(cloudB);
    expect(cloudA.session).not.toBe(cloudB.session);
    expect(cloudA.config.regionName).toBe('RegionOne');
    expect(cloudB.config.regionName).toBe('RegionTwo');
    tokenRequests.length = 0;
    await cloudA.whoami();
    await cloudA.whoami();
    await cloudB.whoami();
    // One token each: A's second call is served from A's cache, B never reuses A's.
    expect(tokenRequests).toHaveLength(2);
    expect(await a()).toBe(cloudA);
    texts.set('one', cloudsYaml(`${base}/v3`, 'rotated-password'));
    expect(await a()).not.toBe(cloudA);
  });
});

describe("a connection's health", () => {
  it('backs off from the first failure (1 s, doubling, at most 30 s), asks every 10 s while up, and says when the state changed', () => {
    const health = new CloudHealth();
    expect(health.state).toEqual({ kind: 'unknown' });
    expect(health.record({ up: true })).toBe(true);
    expect(health.nextProbeInMs()).toBe(10_000);
    expect(health.record({ up: true })).toBe(false);
    const down = { up: false, reason: 'KeystoneUnreachable', message: 'refused' } as const;
    expect(health.record(down, 1_000)).toBe(true);
    expect(health.nextProbeInMs()).toBe(1_000);
    expect(health.record(down, 2_000)).toBe(false);
    expect(health.nextProbeInMs()).toBe(2_000);
    for (let i = 0; i < 8; i++) health.record(down, 3_000 + i);
    expect(health.nextProbeInMs()).toBe(30_000);
    expect(health.state).toEqual({ kind: 'down', reason: 'KeystoneUnreachable', message: 'refused', since: 1_000 });
    expect(health.record({ up: false, reason: 'BadCredentials', message: '401' })).toBe(true);
    expect(health.record({ up: true })).toBe(true);
    expect(health.nextProbeInMs()).toBe(10_000);
  });
});

describe('the probe of a connection', () => {
  const source = { secret: { namespace: 'ops', name: 'one', key: 'clouds.yaml' }, cloud: 'lab' };
  const clientOf = (text: string, region?: string) => cloudFromSecret(secrets(new Map([['one', text]])), source.secret, 'lab', undefined, region);

  it('up: Keystone answers and takes the credentials', async () => {
    refuseCredentials = false;
    expect(await probeCloud(clientOf(cloudsYaml(`${base}/v3`)), source)).toEqual({ up: true, authUrl: `${base}/v3` });
  });

  it('BadCredentials: Keystone answers 401 for a token; the message names the cloud, never the password', async () => {
    refuseCredentials = true;
    const result = await probeCloud(clientOf(cloudsYaml(`${base}/v3`, 'a-wrong-password')), source);
    refuseCredentials = false;
    expect(result).toMatchObject({ up: false, reason: 'BadCredentials' });
    expect(JSON.stringify(result).includes('a-wrong-password')).toBe(false);
  });

  it('KeystoneUnreachable: nothing listens at the auth URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await probeCloud(clientOf(cloudsYaml(`http://127.0.0.1:${port}/v3`)), source);
    expect(result).toMatchObject({ up: false, reason: 'KeystoneUnreachable', authUrl: `http://127.0.0.1:${port}/v3` });
    expect((result as { message: string }).message).toContain(`Keystone at http://127.0.0.1:${port}/v3 does not answer`);
  });

  it('NoSuchRegion: the catalog has no endpoint in the region the connection asks for', async () => {
    const result = await probeCloud(clientOf(cloudsYaml(`${base}/v3`), 'RegionTwo'), { ...source, region: 'RegionTwo' });
    expect(result).toMatchObject({ up: false, reason: 'NoSuchRegion' });
  });

  it('SecretMissing and InvalidCloudsYaml: the clouds.yaml cannot be read', async () => {
    const missing = cloudFromSecret({ get: (ref) => Promise.reject(new KubeSecretNotFoundError(ref, 'does not exist')) }, source.secret, 'lab');
    expect(await probeCloud(missing, source)).toMatchObject({ up: false, reason: 'SecretMissing' });
    expect(await probeCloud(clientOf(stringify({ clouds: { other: {} } })), source)).toMatchObject({ up: false, reason: 'InvalidCloudsYaml' });
  });
});
