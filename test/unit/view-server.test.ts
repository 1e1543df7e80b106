import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { viewPlaceOf } from '../../agent/cli/view-options.ts';
import { UsageError } from '../../agent/errors.ts';
import { sharedSchemaRegistry } from '../../agent/schema/registry.ts';
import { createLogger } from '../../agent/telemetry/logger.ts';
import { csrfHeader, type Overview, type SyncTree } from '../../agent/view/api.ts';
import { localBackend } from '../../agent/view/local-backend.ts';
import type { LocalSync } from '../../agent/view/local-reader.ts';
import { serveView, type ViewServer } from '../../agent/view/server.ts';
import { cloudViewOf } from '../../agent/view/read-clouds.ts';
import { diagnosticOf, healthOf, refsOf, revisionOf } from '../../agent/view/shape.ts';

// The view's server on the standalone agent's state (no cluster): loopback without sign-in, a token file,
// the UI's files with index.html for every page, paths kept inside the folder, and the pure shapes.

const ready = [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'ok' }];
let syncs: LocalSync[] = [];
const state = () => Promise.resolve(structuredClone(syncs));
const servers: ViewServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

function ui(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ks-view-ui-'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>KupenStack</title>');
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'assets', 'app-0123abcd.js'), 'console.log(1)');
  return dir;
}

async function start(tokenFile?: string): Promise<string> {
  syncs = [
    {
      name: 'main',
      source: 'https://git.example/infra.git',
      suspended: false,
      status: { conditions: ready, lastAppliedRevision: 'main@sha1:0123456789abcdef', history: [{ revision: 'main@sha1:0123456789abcdef', startedAt: '2026-01-01T00:00:00Z', result: 'Succeeded' }] },
      resources: { 'team-a/Network/net': { id: 'net-id', conditions: ready } },
    },
  ];
  const v = await serveView({
    listen: { host: '127.0.0.1', port: 0 },
    staticDir: ui(),
    backend: localBackend(state, sharedSchemaRegistry(), tokenFile),
    logger: createLogger('silent'),
  });
  servers.push(v);
  return `http://127.0.0.1:${v.address.port}`;
}

describe('the view over the standalone agent', () => {
  it('answers without sign-in on loopback: the overview and a Sync tree from the agent state', async () => {
    const base = await start();
    const o = (await (await fetch(`${base}/api/overview`)).json()) as Overview;
    expect(o.syncs.map((s) => [s.name, s.health, s.applied?.commit])).toEqual([['main', 'Ready', '0123456789abcdef']]);
    expect(o.namespaces).toEqual([{ name: 'team-a', counts: { Network: 1 }, ready: 1, notReady: 0, stalled: 0 }]);
    const t = (await (await fetch(`${base}/api/syncs/main`)).json()) as SyncTree;
    expect(t.namespaces[0]!.objects.map((x) => [x.kind, x.name, x.openstackId])).toEqual([['Network', 'net', 'net-id']]);
    expect((await fetch(`${base}/api/syncs/nope`)).status).toBe(404);
  });

  it('with --view-token-file: 401 before sign-in, 401 for another token, the session after the right one', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ks-view-token-')), 'token');
    writeFileSync(file, 's3cret-view-token\n');
    const base = await start(file);
    expect((await fetch(`${base}/api/overview`)).status).toBe(401);
    const login = (token: string) => fetch(`${base}/api/login`, { method: 'POST', headers: { [csrfHeader]: '1', 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    expect((await login('wrong')).status).toBe(401);
    const ok = await login('s3cret-view-token');
    expect(ok.status).toBe(200);
    const cookie = /^([^;]+)/.exec(ok.headers.get('set-cookie') ?? '')![1]!;
    expect((await fetch(`${base}/api/overview`, { headers: { cookie } })).status).toBe(200);
  });

  it('sends a change over SSE when the agent state changes', async () => {
    const base = await start();
    const ac = new AbortController();
    const res = await fetch(`${base}/api/events?scope=overview`, { signal: ac.signal });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('event: ready')) text += (await reader.read()).value ?? '';
    syncs[0]!.resources['team-a/Network/net']!.id = 'net-id-2';
    while (!text.includes('event: change')) text += (await reader.read()).value ?? '';
    expect(text).toMatch(/"kind":"Network","namespace":"team-a","name":"net"/);
    ac.abort();
  });

  it("serves the UI's files, index.html for every other page, and nothing outside its folder", async () => {
    const base = await start();
    const page = await fetch(`${base}/namespaces/team-a`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page.text()).toContain('<title>KupenStack</title>');
    const asset = await fetch(`${base}/assets/app-0123abcd.js`);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    const escape = await fetch(`${base}/..%2f..%2f..%2fetc%2fpasswd`);
    expect(await escape.text()).toContain('<title>KupenStack</title>');
    expect((await fetch(`${base}/api/nothing`)).status).toBe(404);
  });
});

describe('the view flags', () => {
  it('the standalone view without a token file listens on loopback only', () => {
    expect(viewPlaceOf({ viewAddress: '127.0.0.1:8080' }, true)?.listen).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(() => viewPlaceOf({ viewAddress: '0.0.0.0:8080' }, true)).toThrow(UsageError);
    expect(viewPlaceOf({ viewAddress: '0.0.0.0:8080' }, false)?.listen.host).toBe('0.0.0.0');
    expect(viewPlaceOf({})).toBeUndefined();
  });
});

describe("the view's shapes", () => {
  it('health from the conditions: Stalled wins, then Ready, then Reconciling', () => {
    expect(healthOf([{ type: 'Ready', status: 'True' }, { type: 'Stalled', status: 'True' }])).toBe('Stalled');
    expect(healthOf([{ type: 'Ready', status: 'False', reason: 'Failed' }])).toBe('Failed');
    expect(healthOf([{ type: 'Ready', status: 'False' }, { type: 'Reconciling', status: 'True' }])).toBe('Reconciling');
    expect(healthOf([], true)).toBe('Suspended');
    expect(healthOf(undefined)).toBe('Unknown');
  });

  it('a revision names its commit or digest, with or without a ref before it', () => {
    expect(revisionOf('main@sha1:0123abcd')).toEqual({ revision: 'main@sha1:0123abcd', commit: '0123abcd' });
    expect(revisionOf('sha256:e3b0c442')?.commit).toBe('e3b0c442');
    expect(revisionOf(undefined)).toBeUndefined();
  });

  it('a diagnostic line split into file, line, column and message', () => {
    expect(diagnosticOf('tenants/a/net.yaml:12:3: spec.mtu: must be >= 68')).toMatchObject({ file: 'tenants/a/net.yaml', line: 12, column: 3, message: 'spec.mtu: must be >= 68' });
    expect(diagnosticOf('no position here')).toEqual({ message: 'no position here', text: 'no position here' });
  });

  it("references from the kind's schema, with the field they sit in", () => {
    const subnet = { metadata: { name: 's', namespace: 'a' }, spec: { networkRef: { name: 'net' } } };
    expect(refsOf(subnet, 'Subnet', sharedSchemaRegistry())).toEqual([{ kind: 'Network', namespace: 'a', name: 'net', field: 'networkRef' }]);
  });

  it("an upgrade's steps with their times, from the cloud loop's Events (newest first as listed)", () => {
    const ev = (reason: string, message: string, at: string) => ({ type: 'Normal', reason, message, count: 1, at });
    const cloud = {
      metadata: { name: 'openstack' },
      status: { release: '2025.1', upgrade: { from: '2025.1', to: '2025.2', phase: 'Upgrading', startedAt: '2026-01-01T00:00:00Z', step: 'nova' }, services: { keystone: { ready: true, release: '2025.2' } } },
    };
    const events = [
      ev('StepStarted', 'step nova started', '2026-01-01T00:03:00Z'),
      ev('GatePassed', 'gate of step keystone passed', '2026-01-01T00:02:00Z'),
      ev('StepStarted', 'step keystone started', '2026-01-01T00:01:00Z'),
      ev('BackupDone', 'backup before the upgrade 2025.1 → 2025.2: s3://b/1', '2026-01-01T00:00:30Z'),
      ev('StepStarted', 'step old started', '2025-12-01T00:00:00Z'),
    ];
    expect(cloudViewOf(cloud, events).upgrade?.steps).toEqual([
      { step: 'backup', state: 'Done', finishedAt: '2026-01-01T00:00:30Z', message: 'backup before the upgrade 2025.1 → 2025.2: s3://b/1' },
      { step: 'keystone', state: 'Done', startedAt: '2026-01-01T00:01:00Z', finishedAt: '2026-01-01T00:02:00Z' },
      { step: 'nova', state: 'Running', startedAt: '2026-01-01T00:03:00Z' },
    ]);
  });
});
