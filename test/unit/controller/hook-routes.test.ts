import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { request, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { serveHealth } from '../../../agent/controller/health.ts';
import type { Controller } from '../../../agent/controller/resources/controller.ts';
import { controllerRoutes } from '../../../agent/controller/routes.ts';
import type { SyncLoop } from '../../../agent/controller/syncs/sync-loop.ts';
import { maxHooksInFlight } from '../../../agent/hooks/in-flight.ts';
import type { SecretResolver } from '../../../agent/secrets/resolver.ts';
import type { SyncConfig } from '../../../agent/sync/settings.ts';
import { createLogger } from '../../../agent/telemetry/logger.ts';
import type { MetricsAccess } from '../../../agent/telemetry/metrics-access.ts';
import { AgentMetrics } from '../../../agent/telemetry/metrics.ts';

// The controller's HTTP side as it serves (health.ts's server, routes.ts's table), with
// the loops faked: what an unauthenticated sender can do to /metrics and to the hooks.
const secret = 'hook-routes-secret-3';
const servers: Server[] = [];

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

interface Mounted {
  base: string;
  runs: string[];
  imagesAsked: number;
}

async function mount(o: { metricsAccess?: MetricsAccess; images?: string[] } = {}): Promise<Mounted> {
  const m: Mounted = { base: '', runs: [], imagesAsked: 0 };
  const sync = { name: 'apps', source: { git: { url: 'https://git.example/team/apps.git', ref: { branch: 'main' } } }, webhook: { secret: { name: 'hook', key: 'token' } } };
  const loop = {
    syncConfig: (name: string) => (name === 'apps' ? (sync as unknown as SyncConfig) : undefined),
    requestRun: (name: string) => void m.runs.push(name),
    syncsFollowing: () => [],
  } as unknown as SyncLoop;
  const controller = {
    imagesFollowing: () => {
      m.imagesAsked++;
      return o.images ?? [];
    },
    resolveAgain: () => Promise.resolve(),
  } as unknown as Controller;
  const secrets: SecretResolver = { get: () => Promise.resolve(secret) };
  const logger = createLogger('info', 'json', new Writable({ write: (_c, _e, done) => done() }));
  const extra = controllerRoutes({
    controller,
    syncs: loop,
    secrets,
    metrics: new AgentMetrics(),
    logger,
    registryHookSecret: { namespace: 'kupenstack-system', name: 'registry-hook', key: 'token' },
    ...(o.metricsAccess ? { metricsAccess: o.metricsAccess } : {}),
  });
  const { server, address } = await serveHealth('127.0.0.1', 0, { ready: () => true, leader: () => undefined, extra });
  servers.push(server);
  m.base = `http://127.0.0.1:${address.port}`;
  return m;
}

const push = (after: string): string => JSON.stringify({ ref: 'refs/heads/main', after, repository: { clone_url: 'https://git.example/team/apps.git' } });
const sign = (body: string): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** The kupenstack_* sample lines (values dropped: a counter's digits grow, its series set must not). */
async function series(base: string): Promise<string[]> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('kupenstack_') && !l.startsWith('kupenstack_process_'))
    .map((l) => l.replace(/ [^ ]+$/, ''))
    .sort();
}

describe("the controller's hooks and /metrics, served (routes.ts)", () => {
  it('1 000 unauthenticated POSTs to random hook names leave /metrics the size it was: unknown names are counted as "unknown"', async () => {
    const m = await mount();
    const providers = [{ 'x-github-event': 'push', 'x-hub-signature-256': 'sha256=00' }, { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'nope' }, { 'x-gitea-event': 'push' }, {}];
    const post = (i: number): Promise<Response> =>
      fetch(`${m.base}/hooks/${i % 5 === 0 ? 'apps' : `n-${randomUUID()}`}`, { method: 'POST', headers: { 'content-type': 'application/json', ...providers[i % providers.length] }, body: push('a'.repeat(40)) });
    // Every kind of refusal once, so the bounded series exist before the baseline.
    const warmUp: number[] = [];
    for (const i of Array.from({ length: 20 }, (_, n) => n)) warmUp.push((await post(i)).status);
    expect(warmUp).toHaveLength(20);
    expect(warmUp.filter((status) => status < 400)).toEqual([]);
    const before = await series(m.base);
    const statuses: number[] = [];
    for (const batch of Array.from({ length: 125 }, (_, n) => n)) {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, j) => post(batch * 8 + j)));
      statuses.push(...answers.map((a) => a.status));
    }
    expect(statuses).toHaveLength(1000);
    expect(statuses.filter((status) => status < 400)).toEqual([]);
    const after = await series(m.base);
    expect(after).toEqual(before);
    expect(after.join('\n')).not.toMatch(/n-[0-9a-f]{8}-/);
    expect(after.filter((l) => l.startsWith('kupenstack_webhook_deliveries_total')).map((l) => /sync="([^"]*)"/.exec(l)?.[1]).sort()).toEqual(
      expect.arrayContaining(['apps', 'unknown']),
    );
    expect(m.runs).toEqual([]);
  }, 60_000);

  it('a signed push replayed with a new delivery id is refused as a replay: the key is the body the signature covers', async () => {
    const m = await mount();
    const body = push(randomBytes(20).toString('hex'));
    const deliver = (id: string): Promise<Response> =>
      fetch(`${m.base}/hooks/apps`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': id, 'x-hub-signature-256': sign(body) }, body });
    expect((await deliver(randomUUID())).status).toBe(202);
    const replay = await deliver(randomUUID());
    expect(replay.status).toBe(200);
    expect(await replay.json()).toMatchObject({ result: 'replayed' });
    expect(m.runs).toEqual(['apps']);
    // Another push (another body) still triggers.
    const next = push(randomBytes(20).toString('hex'));
    const res = await fetch(`${m.base}/hooks/apps`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sign(next) }, body: next });
    expect(res.status).toBe(202);
    expect(m.runs).toEqual(['apps', 'apps']);
  });

  it(`more than ${maxHooksInFlight} hook requests in flight: 429 with Retry-After, and the slots come back once they end`, async () => {
    const m = await mount();
    const { port } = new URL(m.base);
    // Requests whose body never ends hold their slot (readBody waits for it).
    const held = Array.from({ length: maxHooksInFlight }, () => {
      const r = request({ host: '127.0.0.1', port, method: 'POST', path: '/hooks/apps', headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'content-length': '100' } });
      r.on('error', () => undefined);
      r.write('{');
      return r;
    });
    let over: Response | undefined;
    for (let i = 0; i < 100 && over?.status !== 429; i++) over = await fetch(`${m.base}/hooks/apps`, { method: 'POST', headers: { 'x-github-event': 'push' }, body: push('b'.repeat(40)) });
    expect(over?.status).toBe(429);
    expect(over?.headers.get('retry-after')).toBe('1');
    expect(await over?.json()).toEqual({ error: `more than ${maxHooksInFlight} hook requests in flight; retry later` });
    // /metrics and the probes are not hooks: served meanwhile.
    expect((await fetch(`${m.base}/healthz`)).status).toBe(200);
    expect((await fetch(`${m.base}/metrics`)).status).toBe(200);
    for (const r of held) r.destroy();
    let after: Response | undefined;
    for (let i = 0; i < 100 && (after === undefined || after.status === 429); i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = await fetch(`${m.base}/hooks/apps`, { method: 'POST', headers: { 'x-github-event': 'push' }, body: push('c'.repeat(40)) });
    }
    expect(after?.status).toBe(401);
  });

  it('the registry hook answers counts, never the namespaces or names of the Images it moves', async () => {
    const m = await mount({ images: ['tenant-a/Image/os', 'tenant-b/Image/base'] });
    const body = JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date().toISOString(), action: 'push', target: { repository: 'team/os', tag: 'stable' }, request: { host: 'registry.example' } }] });
    const res = await fetch(`${m.base}/hooks/registry`, { method: 'POST', headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', authorization: `Bearer ${secret}` }, body });
    expect(res.status).toBe(202);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ result: 'triggered', resolving: { images: 2, syncs: 0 } });
    expect(text).not.toMatch(/tenant-a|tenant-b|Image\//);
  });

  it('a registry secret in the query string is refused even when right, and nothing is looked up', async () => {
    const m = await mount({ images: ['tenant-a/Image/os'] });
    const body = JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date().toISOString(), action: 'push', target: { repository: 'team/os', tag: 'stable' }, request: { host: 'registry.example' } }] });
    const res = await fetch(`${m.base}/hooks/registry?token=${secret}`, { method: 'POST', headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json' }, body });
    expect(res.status).toBe(401);
    const answer = (await res.json()) as { error: string };
    expect(answer.error).toMatch(/a secret in the URL \(\?token=\) is refused.*Authorization: Bearer/);
    expect(answer.error).not.toContain(secret);
    expect(m.imagesAsked).toBe(0);
  });

  it('/metrics with --metrics-token-file: loopback (the pod itself, a port-forward) still reads it, the token file being unread', async () => {
    const m = await mount({ metricsAccess: { tokenFile: '/nonexistent/kupenstack-metrics-token' } });
    const ok = await fetch(`${m.base}/metrics`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('kupenstack_webhook_deliveries_total');
  });

});
