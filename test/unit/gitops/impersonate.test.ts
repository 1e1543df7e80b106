import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { impersonating, serviceAccountUser } from '../../../agent/controller/syncs/impersonate.ts';
import { applyOne, dryRunApply, type DesiredObject } from '../../../agent/controller/syncs/cluster-apply.ts';
import { manifest } from '../../support/context.ts';

/*
 * What the Sync loop sends the API server, read off the wire by a recording
 * HTTP listener standing where the API server is (the integration tests in
 * test/integration/controller/sync.test.ts check the real API server's
 * verdicts): every write of a Sync carries Impersonate-User, and the dry run
 * is a dryRun=All apply that writes nothing.
 */
let server: Server;
const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
/** Names the listener answers 403 for (as RBAC would), only when asked with dryRun=All. */
const forbidden = new Set<string>();

function kubeconfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    // Plain HTTP on loopback: there is no TLS to verify, and the client refuses http unless told so.
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'controller', token: 'controller-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'controller' }],
    currentContext: 'ctx',
  });
  return kc;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const name = /\/networks\/([^/?]+)/.exec(req.url ?? '')?.[1] ?? '';
    req.resume();
    if (forbidden.has(name)) {
      res.writeHead(403, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: `networks.kupenstack.io "${name}" is forbidden: User "system:serviceaccount:team-a:gitops" cannot patch resource "networks" in API group "kupenstack.io" in the namespace "team-b"` }));
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(() => server.close());

const object = (name: string, namespace: string): DesiredObject => {
  const m = manifest('Network', name, namespace, {});
  return { manifest: m, file: `nets/${name}.yaml`, plural: 'networks', entry: { apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace, name }, body: { apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name, namespace }, spec: {} } };
};

describe('a Sync writes as its ServiceAccount', () => {
  it('every request of the impersonating client carries Impersonate-User; the controller\'s own client does not', async () => {
    seen.length = 0;
    const user = serviceAccountUser('team-a', 'gitops');
    expect(user).toBe('system:serviceaccount:team-a:gitops');
    const kc = kubeconfig();
    await applyOne(impersonating(kc, user).makeApiClient(k8s.CustomObjectsApi), object('n1', 'team-a'), 'kupenstack-sync-x', false);
    await applyOne(kc.makeApiClient(k8s.CustomObjectsApi), object('n2', 'team-a'), 'kupenstack-sync-x', false);
    expect(seen.map((s) => [s.url.split('?')[0], s.headers['impersonate-user']])).toEqual([
      ['/apis/kupenstack.io/v1alpha1/namespaces/team-a/networks/n1', user],
      ['/apis/kupenstack.io/v1alpha1/namespaces/team-a/networks/n2', undefined],
    ]);
    // The original kubeconfig is left as it was: the controller's own requests never impersonate.
    expect(kc.getCurrentUser()?.impersonateUser).toBeUndefined();
  });

  it('the dry run applies every object with dryRun=All, names each refused one, and writes nothing', async () => {
    seen.length = 0;
    forbidden.add('intruder');
    const writer = impersonating(kubeconfig(), serviceAccountUser('team-a', 'gitops')).makeApiClient(k8s.CustomObjectsApi);
    const dry = await dryRunApply(writer, [object('n1', 'team-a'), object('intruder', 'team-b'), object('n3', 'team-a')], 'kupenstack-sync-x');
    expect(dry.transient).toBeUndefined();
    expect(dry.refused).toEqual([expect.stringMatching(/^nets\/intruder\.yaml:\d+:\d+: .*cannot patch resource "networks".*team-b/)]);
    expect(seen).toHaveLength(3);
    expect(seen.every((s) => s.method === 'PATCH' && new URL(s.url, 'http://x').searchParams.get('dryRun') === 'All')).toBe(true);
  });
});
