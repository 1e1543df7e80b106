import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig, serverSideApply } from '../../../agent/kube/client.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';
import { createLogger } from '../../../agent/telemetry/logger.ts';
import type { ApiError, ChangeEvent, HeldPlan, NamespaceView, Overview, SyncTree, WhoAmI } from '../../../agent/view/api.ts';
import { csrfHeader } from '../../../agent/view/api.ts';
import { kubeBackend } from '../../../agent/view/kube-backend.ts';
import { serveView, type ViewServer } from '../../../agent/view/server.ts';
import { kube, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * The web view's server half (issue 52) on the real API server: a tenant
 * ServiceAccount with kupenstack-view in team-a signs in with its token, sees
 * team-a and gets 403 for team-b (the API server decides: every read is made
 * with the tenant's own token), live changes arrive over server-sent events,
 * the session cookie's flags, and the token never in the logs.
 */

const admin = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const core = admin.makeApiClient(CoreV1Api);
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const suffix = randomBytes(3).toString('hex');
const teamA = `view-a-${suffix}`;
const teamB = `view-b-${suffix}`;
const group = 'kupenstack.io';
const version = 'v1alpha1';
let token = '';
let view: ViewServer;
let base = '';
const logged: string[] = [];

/** A Network as the controller leaves it: status with its OpenStack id and a Ready condition. */
async function network(namespace: string, name: string, id: string, ready: 'True' | 'False' = 'True'): Promise<void> {
  const body = { apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name, namespace }, spec: { mtu: 1400 } };
  await custom.createNamespacedCustomObject({ group, version, namespace, plural: 'networks', body }).catch(() => undefined);
  await setStatus(namespace, name, id, ready);
}

async function setStatus(namespace: string, name: string, id: string, ready: 'True' | 'False'): Promise<void> {
  const status = {
    id,
    conditions: [
      { type: 'Ready', status: ready, reason: ready === 'True' ? 'Succeeded' : 'Progressing', message: 'm', lastTransitionTime: new Date().toISOString() },
    ],
  };
  await custom.patchNamespacedCustomObjectStatus(
    {
      group,
      version,
      namespace,
      plural: 'networks',
      name,
      body: { apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name, namespace }, status },
      fieldManager: 'view-test',
      force: true,
    },
    serverSideApply,
  );
}

beforeAll(async () => {
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', 'deploy/crds/']);
  await kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=kupenstack']);
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }),
  });
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-k', 'deploy/rbac']);
  for (const name of [teamA, teamB]) await core.createNamespace({ body: { metadata: { name, labels: { 'kupenstack.io/project': 'enabled' } } } });
  await core.createNamespacedServiceAccount({ namespace: teamA, body: { metadata: { name: 'tenant' } } });
  await rbac.createNamespacedRoleBinding({
    namespace: teamA,
    body: {
      metadata: { name: 'tenant-kupenstack-view' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kupenstack-view' },
      subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace: teamA }],
    },
  });
  await network(teamA, 'net-a', 'a0000000-0000-4000-8000-00000000000a');
  await network(teamB, 'net-b', 'b0000000-0000-4000-8000-00000000000b');
  const tr = await core.createNamespacedServiceAccountToken({ name: 'tenant', namespace: teamA, body: { spec: { audiences: [], expirationSeconds: 900 } } });
  token = tr.status!.token!;
  const out = new Writable({ write: (chunk: Buffer, _e, cb) => (logged.push(chunk.toString()), cb()) });
  view = await serveView({
    listen: { host: '127.0.0.1', port: 0 },
    staticDir: '/nonexistent-view-dir',
    backend: kubeBackend(admin, loadSchemaRegistry(), () => Promise.resolve([teamA, teamB])),
    logger: createLogger('debug', 'json', out),
  });
  base = `http://127.0.0.1:${view.address.port}`;
}, 120_000);

afterAll(async () => {
  await view?.close();
  for (const name of [teamA, teamB]) await core.deleteNamespace({ name }).catch(() => undefined);
});

async function login(t: string, headers: Record<string, string> = { [csrfHeader]: '1' }): Promise<Response> {
  return fetch(`${base}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ token: t }) });
}

async function signedIn(): Promise<string> {
  const res = await login(token);
  expect(res.status).toBe(200);
  return /^([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
}

const get = (path: string, cookie?: string) => fetch(`${base}${path}`, { headers: cookie ? { cookie } : {} });

describe('the web view, signed in as a tenant with kupenstack-view in team-a', () => {
  it('sees team-a with its OpenStack ids and gets 403 JSON for team-b (the API server decides)', async () => {
    const cookie = await signedIn();
    const me = (await (await get('/api/whoami', cookie)).json()) as WhoAmI;
    expect(me.username).toBe(`system:serviceaccount:${teamA}:tenant`);
    const a = await get(`/api/namespaces/${teamA}`, cookie);
    expect(a.status).toBe(200);
    const ns = (await a.json()) as NamespaceView;
    expect(ns.kinds.Network?.map((n) => [n.name, n.openstackId, n.health])).toEqual([['net-a', 'a0000000-0000-4000-8000-00000000000a', 'Ready']]);
    for (const path of [`/api/namespaces/${teamB}`, `/api/namespaces/${teamB}/Network/net-b`]) {
      const b = await get(path, cookie);
      expect(b.status).toBe(403);
      const err = (await b.json()) as ApiError;
      expect(err).toMatchObject({ status: 403, code: 'forbidden' });
      expect(JSON.stringify(err)).not.toContain('b0000000');
    }
    const overview = (await (await get('/api/overview', cookie)).json()) as Overview;
    expect(overview.namespaces.map((n) => n.name)).toEqual([teamA]);
    expect(overview.forbidden).toContain('syncs');
    expect(JSON.stringify(overview)).not.toContain(teamB);
  });

  it('answers 401 without a session, refuses a token the API server does not accept, and a login without the CSRF header or from another origin', async () => {
    expect((await get(`/api/namespaces/${teamA}`)).status).toBe(401);
    expect((await login('not-a-token')).status).toBe(401);
    expect((await login(token, {})).status).toBe(403);
    expect((await login(token, { [csrfHeader]: '1', origin: 'https://evil.example' })).status).toBe(403);
    expect((await fetch(`${base}/api/overview`, { method: 'DELETE' })).status).toBe(405);
  });

  it('sets an HttpOnly, SameSite=Strict session cookie holding a random id (Secure behind TLS), and logout ends the session', async () => {
    const res = await login(token);
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^kupenstack_view=[A-Za-z0-9_-]{43}; /);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    expect(cookie).not.toContain('Secure');
    expect(cookie).not.toContain(token);
    const tls = await login(token, { [csrfHeader]: '1', 'x-forwarded-proto': 'https' });
    expect(tls.headers.get('set-cookie')).toContain('; Secure');
    const id = /^([^;]+)/.exec(cookie)![1]!;
    expect((await fetch(`${base}/api/logout`, { method: 'POST', headers: { cookie: id, [csrfHeader]: '1' } })).status).toBe(204);
    expect((await get('/api/whoami', id)).status).toBe(401);
  });

  it('streams a status change of a team-a object over server-sent events, and denies a team-b scope', async () => {
    const cookie = await signedIn();
    const ac = new AbortController();
    const res = await fetch(`${base}/api/events?scope=namespace:${teamA}`, { headers: { cookie }, signal: ac.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (re: RegExp, ms: number): Promise<string> => {
      const deadline = Date.now() + ms;
      while (!re.test(text)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no ${re} within ${ms} ms; got: ${text}`);
        const r = await Promise.race([reader.read(), new Promise<undefined>((r) => setTimeout(() => r(undefined), left))]);
        if (r === undefined || r.done) continue;
        text += r.value;
      }
      return text;
    };
    await until(/event: ready/, 15_000);
    const changedAt = Date.now();
    await setStatus(teamA, 'net-a', 'a0000000-0000-4000-8000-00000000000a', 'False');
    await until(/event: change\ndata: .*"name":"net-a"/, 2_000);
    expect(Date.now() - changedAt).toBeLessThan(2_000);
    const line = /event: change\ndata: (.*)/.exec(text.slice(text.indexOf('event: change')))![1]!;
    expect(JSON.parse(line) as ChangeEvent).toMatchObject({ scope: `namespace:${teamA}`, kind: 'Network', namespace: teamA, name: 'net-a' });
    ac.abort();
    const denied = await (await fetch(`${base}/api/events?scope=namespace:${teamB}`, { headers: { cookie } })).text();
    expect(denied).toMatch(/event: denied\ndata: .*"status":403/);
  });

  it('streams the overview to a tenant: the cluster-wide watches it may not make are made in the namespaces it may read', async () => {
    const cookie = await signedIn();
    const ac = new AbortController();
    const res = await fetch(`${base}/api/events?scope=overview`, { headers: { cookie }, signal: ac.signal });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const deadline = Date.now() + 20_000;
    while (!/event: (ready|denied)/.test(text) && Date.now() < deadline) text += (await reader.read()).value ?? '';
    expect(text).toContain('event: ready');
    await setStatus(teamA, 'net-a', 'a0000000-0000-4000-8000-00000000000a', 'True');
    while (!/"name":"net-a"/.test(text) && Date.now() < deadline) text += (await reader.read()).value ?? '';
    expect(text).toMatch(/event: change\ndata: \{"scope":"overview","type":"MODIFIED","kind":"Network","namespace":"view-a-/);
    expect(text).not.toContain(teamB);
    ac.abort();
  });

  it("an operator who may read Syncs sees a Sync's tree (revision → namespaces → objects) and its held revision's plan", async () => {
    const sa = `view-operator-${suffix}`;
    await core.createNamespacedServiceAccount({ namespace: teamA, body: { metadata: { name: sa } } });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: sa },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: teamA }],
      },
    });
    const name = `view-sync-${suffix}`;
    try {
      const sync = {
        apiVersion: `${group}/${version}`,
        kind: 'Sync',
        metadata: { name },
        spec: { suspend: true, source: { git: { url: 'https://git.invalid/infra.git', ref: { branch: 'main' } } } },
      };
      await custom.createClusterCustomObject({ group, version, plural: 'syncs', body: sync });
      const held = 'main@sha1:' + 'b'.repeat(40);
      const message = `${held} applied except 1 deletions held by the mass-delete guard (massDeleteThreshold 25%): Network/${teamA}/net-a; confirm with kubectl annotate sync ${name} kupenstack.io/allow-mass-delete=${held}`;
      const status = {
        conditions: [{ type: 'Ready', status: 'False', reason: 'DeletionHeld', message, lastTransitionTime: new Date().toISOString() }],
        lastAppliedRevision: 'main@sha1:' + 'a'.repeat(40),
        heldRevision: held,
        inventory: [
          { apiVersion: `${group}/${version}`, kind: 'Network', namespace: teamA, name: 'net-a' },
          { apiVersion: `${group}/${version}`, kind: 'Network', namespace: teamB, name: 'net-b' },
        ],
        history: [{ revision: held, startedAt: new Date().toISOString(), result: 'Held', counts: { held: 1 } }],
      };
      await custom.patchClusterCustomObjectStatus(
        {
          group,
          version,
          plural: 'syncs',
          name,
          body: { apiVersion: `${group}/${version}`, kind: 'Sync', metadata: { name }, status },
          fieldManager: 'view-test',
          force: true,
        },
        serverSideApply,
      );
      const tr = await core.createNamespacedServiceAccountToken({ name: sa, namespace: teamA, body: { spec: { audiences: [], expirationSeconds: 900 } } });
      const res = await login(tr.status!.token!);
      expect(res.status).toBe(200);
      const cookie = /^([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
      const tree = (await (await get(`/api/syncs/${name}`, cookie)).json()) as SyncTree;
      expect(tree.sync).toMatchObject({ name, suspended: true, health: 'Suspended', held, applied: { commit: 'a'.repeat(40) } });
      expect(tree.namespaces.map((n) => [n.name, n.objects.map((o) => [o.kind, o.name, o.openstackId])])).toEqual([
        [teamA, [['Network', 'net-a', 'a0000000-0000-4000-8000-00000000000a']]],
        [teamB, [['Network', 'net-b', 'b0000000-0000-4000-8000-00000000000b']]],
      ]);
      const plan = (await (await get(`/api/syncs/${name}/plan`, cookie)).json()) as HeldPlan;
      expect(plan).toMatchObject({
        sync: name,
        revision: held,
        why: 'mass-delete',
        counts: { held: 1 },
        deletions: [{ kind: 'Network', namespace: teamA, name: 'net-a' }],
      });
      expect(plan.confirm).toBe(`kubectl annotate sync ${name} kupenstack.io/allow-mass-delete=${held}`);
      // The tenant may not read Syncs: 403, and the overview says so.
      const tenantCookie = await signedIn();
      expect((await get(`/api/syncs/${name}`, tenantCookie)).status).toBe(403);
    } finally {
      await custom.deleteClusterCustomObject({ group, version, plural: 'syncs', name }).catch(() => undefined);
      await rbac.deleteClusterRoleBinding({ name: sa }).catch(() => undefined);
    }
  });

  it('never writes the token to its logs', () => {
    expect(logged.join('')).toContain('view: signed in');
    expect(logged.join('')).not.toContain(token);
    expect(logged.join('')).not.toContain(token.slice(-20));
  });
});
