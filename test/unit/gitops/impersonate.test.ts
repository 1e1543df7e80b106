import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { impersonating, serviceAccountUser, syncWriter } from '../../../agent/controller/syncs/impersonate.ts';
import { KubeSyncStatusStore } from '../../../agent/controller/syncs/status-store.ts';
import { SyncWorker } from '../../../agent/controller/syncs/sync-worker.ts';
import { sharedSchemaRegistry } from '../../../agent/schema/registry.ts';
import type { Source } from '../../../agent/source/source.ts';
import type { SyncConfig } from '../../../agent/sync/settings.ts';
import { createLogger } from '../../../agent/telemetry/logger.ts';
import { AgentMetrics } from '../../../agent/telemetry/metrics.ts';
import type { ValidatedRevision } from '../../../agent/validate/validate.ts';
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

/*
 * The Sync worker's own use of them (the call sites; the integration twin is the Forbidden case of
 * test/integration/controller/sync.test.ts): the client a Sync loop builds impersonates its ServiceAccount,
 * and a revision the ServiceAccount may not fully write is refused by the dry run, so not one object of it
 * is written, not even those before the refused one.
 */
describe("a Sync's revision goes out as its ServiceAccount, dry run first", () => {
  it('syncWriter impersonates the named ServiceAccount on every request', async () => {
    seen.length = 0;
    const writer = syncWriter(kubeconfig(), { namespace: 'kupenstack-system', name: 'tenants' });
    await applyOne(writer, object('n1', 'team-a'), 'kupenstack-sync-x', false);
    expect(seen.map((s) => s.headers['impersonate-user'])).toEqual(['system:serviceaccount:kupenstack-system:tenants']);
  });

  function worker(): SyncWorker {
    const sync: SyncConfig = { name: 'tenants', source: {}, path: '.', intervalMs: 60_000, retryIntervalMs: 10_000, timeoutMs: 60_000, suspend: false, prune: true, dependsOn: [], wait: false, owner: 'o1', projectPrefix: 'kst-' };
    const source: Source = { kind: 'git', description: 'git (unit)', fetch: () => Promise.reject(new Error('not fetched here')), close: () => Promise.resolve() };
    const controller = kubeconfig().makeApiClient(k8s.CustomObjectsApi);
    return new SyncWorker({
      sync,
      massDeleteThreshold: 50,
      source,
      store: new KubeSyncStatusStore(controller, () => true, 'tenants', source.description, false, undefined),
      writer: syncWriter(kubeconfig(), { namespace: 'team-a', name: 'gitops' }),
      registry: sharedSchemaRegistry(),
      metrics: new AgentMetrics(),
      log: createLogger('silent'),
      acting: () => true,
      event: () => undefined,
      annotations: () => ({}),
      lookAgain: () => undefined,
    });
  }
  const revision = (names: [string, string][]): { revision: string; dir: string; validated: ValidatedRevision } => ({
    revision: 'main@sha1:abc',
    dir: '/repo',
    validated: { manifests: names.map(([name, ns]) => manifest('Network', name, ns, {})), references: [], graph: undefined as unknown as ValidatedRevision['graph'], order: [], diagnostics: [] },
  });
  const writes = () => seen.filter((s) => s.url.includes('/networks/')).map((s) => `${new URL(s.url, 'http://x').searchParams.get('dryRun') === 'All' ? 'dry' : 'WRITE'} ${s.url.split('?')[0]!.split('/').pop()}`);

  it('a revision with one object the ServiceAccount may not write is Rejected by the dry run: nothing of it is written', async () => {
    seen.length = 0;
    forbidden.add('intruder');
    const outcome = await worker().apply(revision([['n1', 'team-a'], ['intruder', 'team-b'], ['n3', 'team-a']]), 'interval', new AbortController().signal, false);
    expect(outcome).toMatchObject({ result: 'Rejected', refusals: [expect.stringMatching(/intruder.*cannot patch resource "networks"/)] });
    expect(writes()).toEqual(['dry n1', 'dry intruder', 'dry n3']);
  });

  it('a revision it may write is dry-run whole, then written, each write as the ServiceAccount', async () => {
    seen.length = 0;
    const outcome = await worker().apply(revision([['n1', 'team-a'], ['n2', 'team-a']]), 'interval', new AbortController().signal, false);
    expect(outcome).toMatchObject({ result: 'Succeeded', revision: 'main@sha1:abc', counts: { applied: 2 } });
    expect(writes()).toEqual(['dry n1', 'dry n2', 'WRITE n1', 'WRITE n2']);
    expect(new Set(seen.filter((s) => s.url.includes('/networks/')).map((s) => s.headers['impersonate-user']))).toEqual(new Set(['system:serviceaccount:team-a:gitops']));
  });
});
