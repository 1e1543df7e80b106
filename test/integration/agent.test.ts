import { createHmac, randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type PromFamily } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { SyncStatus } from '../../agent/sync/status.ts';
import { AgentProcess, freePort, head, networksIn, subnetsIn, TestRepo } from '../support/agent-harness.ts';
import { GitRelay } from '../support/agent-proxy.ts';
import { testCloudName } from '../support/context.ts';
import { peers } from '../support/peers.ts';

/**
 * `kupenstack agent` end to end: a real Git server (test bed, smart HTTP with
 * Basic auth), pushes with the git CLI, a post-receive hook sending signed
 * Gitea-style webhooks, and the real OpenStack of the test bed.
 */

const net = (name: string, ns = 'team'): string => `${head('Network', name, ns)}  mtu: 1400\n`;
const applied = (sha: string) => (s: SyncStatus): boolean => s.lastAppliedRevision?.endsWith(sha) === true && s.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
const readyReason = (reason: string) => (s: SyncStatus): boolean => s.conditions.some((c) => c.type === 'Ready' && c.status === 'False' && c.reason === reason);
const names = (nets: { name: string }[]): string[] => nets.map((n) => n.name).sort();

describe('kupenstack agent: one Sync through pushes, bad revisions and broken sources', () => {
  const agent = new AgentProcess();
  const repo = new TestRepo('agent-main');
  const secret = `hook-${randomUUID()}`;
  const secretFile = join(agent.dir, 'hook-secret');
  const passwordFile = join(agent.dir, 'git-password');
  let relay: GitRelay;
  const project = `${agent.owner}-team`;

  beforeAll(async () => {
    relay = await GitRelay.start(await freePort());
    writeFileSync(secretFile, `${secret}\n`);
    writeFileSync(passwordFile, `${peers.git.password}\n`);
    agent.configure([
      {
        name: 'app',
        // Through the relay, so the test can make the server unreachable.
        source: { git: { url: repo.url.replace(':8180/', `:${relay.port}/`), ref: { branch: 'main' }, username: peers.git.user, passwordFile } },
        interval: '30s',
        retryInterval: '1s',
        timeout: '2m',
        webhook: { secretFile },
      },
    ]);
    await agent.start();
    repo.installPushHook(`${agent.base}/hooks/app`, secret);
  });

  afterAll(async () => {
    await relay.down();
    await agent.dispose(['app']);
    repo.dispose();
  });

  it('is not ready before its first reconcile, and says why', async () => {
    // Nothing pushed yet: the branch does not exist.
    const s = await agent.waitFor('app', 'RefNotFound', readyReason('RefNotFound'));
    expect(agent.ready(s).message).toMatch(/main/);
    const r = await agent.get('/readyz');
    expect(r.status).toBe(503);
    const body = (await r.json()) as { status: string; syncs: Record<string, { ready: boolean; reason: string; message: string }> };
    expect(body.syncs.app).toMatchObject({ ready: false, reason: 'RefNotFound' });
    expect((await agent.get('/healthz')).status).toBe(200);
  });

  let first = '';
  it('a git push that adds a network: the network appears in the Sync\'s project, marked with its owner', async () => {
    repo.write({ 'team/net-a.yaml': net('net-a') });
    first = repo.commit('net-a');
    repo.push();
    const s = await agent.waitFor('app', `applied ${first}`, applied(first));
    expect(s.lastAppliedRevision).toBe(`main@sha1:${first}`);
    expect(s.history[0]).toMatchObject({ revision: `main@sha1:${first}`, result: 'Succeeded', counts: { created: 1, failed: 0 } });
    const nets = await networksIn(project);
    expect(names(nets)).toEqual(['net-a']);
    expect(nets[0]!.description).toContain(`[kupenstack ${agent.owner}-app Network/net-a`);
    expect((await agent.get('/readyz')).status).toBe(200);
    // The push reached the agent through the webhook, not the 30 s interval.
    expect(agent.lines.some((l) => l.msg === 'webhook: push received, fetching now')).toBe(true);
  });

  it('a revision with one invalid file: nothing from it is applied, status names the file and line, the previous revision stays; the next good push applies', async () => {
    repo.write({ 'team/net-b.yaml': net('net-b'), 'team/bad.yaml': `${head('Network', 'net-bad', 'team')}  mtu: 1400\n  colour: blue\n` });
    const bad = repo.commit('net-b and a bad file');
    repo.push();
    const s = await agent.waitFor('app', 'rejected', (x) => x.rejectedRevision?.endsWith(bad) === true && readyReason('ValidationFailed')(x));
    const ready = agent.ready(s);
    expect(ready.message).toMatch(/team\/bad\.yaml:8:\d+/);
    expect(ready.message).toContain('colour');
    // Named as the repository names it, never by the agent's private copy of the revision.
    expect(s.rejectedBecause?.[0]).toMatch(/^team\/bad\.yaml:8:\d+: error/);
    expect(ready.message).not.toContain(agent.stateDir);
    expect(agent.lines.find((l) => l.msg === 'revision rejected: nothing applied')?.first).toMatch(/^team\/bad\.yaml:8:\d+: error/);
    expect(ready.message).toContain(`main@sha1:${first} stays applied`);
    expect(s.lastAppliedRevision).toBe(`main@sha1:${first}`);
    expect(s.lastAttemptedRevision).toBe(`main@sha1:${bad}`);
    expect(s.history[0]).toMatchObject({ revision: `main@sha1:${bad}`, result: 'Rejected' });
    expect(s.conditions.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'ValidationFailed' });
    expect(names(await networksIn(project))).toEqual(['net-a']);

    repo.write({ 'team/bad.yaml': null });
    const good = repo.commit('drop the bad file');
    repo.push();
    await agent.waitFor('app', `applied ${good}`, applied(good));
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-b']);
  });

  it('a force-push that rewrites history is applied, and what it dropped is pruned', async () => {
    repo.git(['reset', '-q', '--hard', first]);
    repo.write({ 'team/net-d.yaml': net('net-d') });
    const rewritten = repo.commit('rewritten: net-a and net-d');
    repo.push({ force: true });
    const s = await agent.waitFor('app', `applied ${rewritten}`, applied(rewritten));
    expect(s.history[0]).toMatchObject({ result: 'Succeeded', counts: { created: 1, deleted: 1 } });
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-d']);
  });

  it('a deleted branch: a clear status, the cloud left as it was; pushing the branch again recovers', async () => {
    repo.push({ ref: ':refs/heads/main' });
    const s = await agent.waitFor('app', 'RefNotFound', readyReason('RefNotFound'));
    expect(agent.ready(s).message).toMatch(/main/);
    expect(agent.ready(s).message).toMatch(/stays applied/);
    expect(s.conditions.find((c) => c.type === 'Stalled')?.status).toBe('True');
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-d']);

    repo.write({ 'team/net-e.yaml': net('net-e') });
    const back = repo.commit('branch back, with net-e');
    repo.push();
    await agent.waitFor('app', `applied ${back}`, applied(back));
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-d', 'net-e']);
  });

  it('bad credentials: a clear status naming authentication, never the password; fixing the password file recovers without a restart', async () => {
    writeFileSync(passwordFile, 'wrong-password\n');
    repo.write({ 'team/net-f.yaml': net('net-f') });
    const sha = repo.commit('net-f');
    repo.push();
    const s = await agent.waitFor('app', 'AuthenticationFailed', readyReason('AuthenticationFailed'));
    expect(JSON.stringify(s)).not.toContain('wrong-password');
    expect(JSON.stringify(agent.lines)).not.toContain('wrong-password');
    expect(JSON.stringify(agent.lines)).not.toContain(peers.git.password);
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-d', 'net-e']);

    writeFileSync(passwordFile, `${peers.git.password}\n`);
    await agent.waitFor('app', `applied ${sha}`, applied(sha), 90_000);
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-d', 'net-e', 'net-f']);
  });

  it('an unreachable Git server: a clear status, retried; once it is back the pending revision is applied without a restart', async () => {
    await relay.down();
    repo.write({ 'team/net-g.yaml': net('net-g') });
    const sha = repo.commit('net-g');
    repo.push(); // the hook triggers a fetch, which cannot connect
    const s = await agent.waitFor('app', 'SourceUnreachable', readyReason('SourceUnreachable'));
    expect(s.conditions.find((c) => c.type === 'Stalled')?.status).toBe('False');
    await relay.up();
    await agent.waitFor('app', `applied ${sha}`, applied(sha), 90_000);
    expect(names(await networksIn(project))).toEqual(['net-a', 'net-d', 'net-e', 'net-f', 'net-g']);
  });

  it('webhook deliveries: a bad signature is refused, a good one triggers, a replayed one is ignored', async () => {
    // A commit the agent has not heard of: pushed with the server's hook set aside, so only the delivery below announces it.
    const hook = join(repo.bareDir, 'hooks', 'post-receive');
    renameSync(hook, `${hook}.off`);
    // An in-place change (mtu), so the Sync's resource counts checked below stay as they were.
    repo.write({ 'team/net-a.yaml': net('net-a').replace('mtu: 1400', 'mtu: 1350') });
    const announced = repo.commit('net-a mtu 1350, announced by hand');
    try {
      repo.push();
    } finally {
      renameSync(`${hook}.off`, hook);
    }
    const body = JSON.stringify({ ref: 'refs/heads/main', after: announced, repository: { clone_url: repo.url } });
    const post = (headers: Record<string, string>): Promise<Response> => agent.get('/hooks/app', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const sig = (s: string): string => createHmac('sha256', s).update(body).digest('hex');
    const id = randomUUID();
    expect((await post({ 'x-gitea-event': 'push', 'x-gitea-delivery': id, 'x-gitea-signature': sig('not-the-secret') })).status).toBe(401);
    const applying = agent.nextLine('applying the announced revision', (l) => l.msg === 'applying revision' && String(l.revision).endsWith(announced));
    expect((await post({ 'x-github-event': 'push', 'x-github-delivery': id, 'x-hub-signature-256': `sha256=${sig(secret)}` })).status).toBe(202);
    // The good delivery led to a fetch and an apply (triggered by the webhook, not the 30 s interval), seen in status and in the cloud.
    expect(await applying).toMatchObject({ trigger: 'webhook' });
    await agent.waitFor('app', `applied ${announced}`, applied(announced));
    expect((await networksIn(project)).find((n) => n.name === 'net-a')).toMatchObject({ mtu: 1350 });
    const replay = await post({ 'x-github-event': 'push', 'x-github-delivery': id, 'x-hub-signature-256': `sha256=${sig(secret)}` });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toMatchObject({ result: 'replayed' });
    // A forged delivery did not burn the id of a later genuine one: the 401 came first, yet the good one triggered.
    expect((await post({ 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': 'nope' })).status).toBe(401);
    expect((await post({ 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': secret, 'x-gitlab-event-uuid': randomUUID() })).status).toBe(202);
    expect((await agent.get('/hooks/nope', { method: 'POST', headers: { 'x-github-event': 'push' }, body })).status).toBe(404);
  });

  it('/metrics parses as Prometheus text and holds the named series with sensible values', async () => {
    const text = await (await agent.get('/metrics')).text();
    const families = new Map<string, PromFamily>(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    const samples = (name: string, labels: Record<string, string> = {}): PromFamily['metrics'] => (families.get(name)?.metrics ?? []).filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));

    // Histograms: parse-prometheus-text-format merges the buckets of labelled histograms into one
    // sample (prom2json style), so their type and buckets are checked here and the values through
    // the plain series the agent exports beside them.
    for (const name of ['kupenstack_reconcile_duration_seconds', 'kupenstack_source_fetch_duration_seconds']) {
      const family = families.get(name);
      expect(family?.type, name).toBe('HISTOGRAM');
      expect(Number(family?.metrics[0]?.buckets?.['+Inf']), name).toBeGreaterThanOrEqual(1);
    }
    expect(text).toMatch(/^kupenstack_reconcile_duration_seconds_count\{sync="app",result="success"\} ([6-9]|\d\d+)$/m);
    const runs = (result: string): number => samples('kupenstack_reconcile_total', { sync: 'app', result }).reduce((n, m) => n + Number(m.value), 0);
    expect(runs('success')).toBeGreaterThanOrEqual(6);
    expect(runs('failure')).toBeGreaterThanOrEqual(3);
    const last = Number(samples('kupenstack_reconcile_last_duration_seconds', { sync: 'app' })[0]?.value);
    expect(last).toBeGreaterThan(0);
    expect(last).toBeLessThan(120);

    const posts = samples('kupenstack_openstack_api_calls_total', { sync: 'app', service: 'network', method: 'POST', status: '201' });
    expect(Number(posts[0]?.value)).toBeGreaterThanOrEqual(6);
    expect(Number(samples('kupenstack_openstack_api_calls_total', { sync: 'app', service: 'network', method: 'DELETE' })[0]?.value)).toBeGreaterThanOrEqual(1);
    expect(samples('kupenstack_openstack_api_calls_total', { sync: 'app', method: 'AUTH' }).length).toBeGreaterThanOrEqual(1);

    expect(Number(samples('kupenstack_resources', { sync: 'app', kind: 'Network', state: 'ready' })[0]?.value)).toBe(5);

    expect(Number(samples('kupenstack_source_fetch_total', { sync: 'app', result: 'ok' })[0]?.value)).toBeGreaterThanOrEqual(6);
    for (const failure of ['auth', 'unreachable', 'ref-not-found']) expect(Number(samples('kupenstack_source_fetch_total', { sync: 'app', result: failure })[0]?.value), failure).toBeGreaterThanOrEqual(1);

    const status = await agent.status('app');
    const info = samples('kupenstack_last_applied_revision_info', { sync: 'app' });
    expect(info).toEqual([{ labels: { sync: 'app', revision: status.lastAppliedRevision }, value: '1' }]);
    expect(samples('kupenstack_sync_ready', { sync: 'app' })[0]?.value).toBe('1');
    expect(Number(samples('kupenstack_webhook_deliveries_total', { sync: 'app', provider: 'gitea', result: 'triggered' })[0]?.value)).toBeGreaterThanOrEqual(5);
    expect(Number(samples('kupenstack_webhook_deliveries_total', { sync: 'app', provider: 'github', result: 'replayed' })[0]?.value)).toBe(1);
  });

  it('keeps the last 10 runs in its status, newest first, and logs JSON lines with levels', async () => {
    const s = await agent.status('app');
    expect(s.history.length).toBeGreaterThanOrEqual(7);
    expect(s.history.length).toBeLessThanOrEqual(10);
    const times = s.history.map((h) => Date.parse(h.startedAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const h of s.history) {
      expect(h.revision).toMatch(/^main@sha1:[0-9a-f]{40}$/);
      expect(h.duration).toMatch(/s$/);
      expect(['Succeeded', 'Failed', 'Rejected', 'Held']).toContain(h.result);
    }
    // As arrays (a Set has no own properties, so objectContaining(new Set(…)) matched anything): the levels seen, and the level of known lines.
    const levels = [...new Set(agent.lines.map((l) => l.level))].sort((a, b) => a - b);
    expect(levels).toEqual(expect.arrayContaining([20, 30, 40]));
    const levelsOf = (msg: string): number[] => [...new Set(agent.lines.filter((l) => l.msg === msg).map((l) => l.level))];
    expect({ fetched: levelsOf('fetched'), applying: levelsOf('applying revision'), fetchFailed: levelsOf('fetch failed'), rejected: levelsOf('revision rejected: nothing applied') }).toEqual({
      fetched: [20],
      applying: [30],
      fetchFailed: [40],
      rejected: [40],
    });
  });

  it('SIGTERM: finishes, saves its status and exits 0', async () => {
    expect(await agent.kill('SIGTERM')).toBe(0);
    expect(agent.lines.at(-1)?.msg).toBe('stopped');
  });
});

describe('kupenstack agent: kill -9 in the middle of a reconcile, then a restart', () => {
  const agent = new AgentProcess();
  const repo = new TestRepo('agent-crash');
  const namespaces = ['crash-a', 'crash-b'];
  const perNamespace = 12;

  afterAll(async () => {
    await agent.dispose(['crash']);
    repo.dispose();
  });

  // Two cold starts, two full applies and a prune: past the default 180 s on the loaded 2-core test bed.
  it('converges with no duplicates; a SIGTERM mid-prune exits cleanly and a restart converges', { timeout: 480_000 }, async () => {
    for (const ns of namespaces) {
      const docs: string[] = [];
      for (let i = 0; i < perNamespace; i++) docs.push(net(`net-${i}`, ns), `${head('Subnet', `sub-${i}`, ns)}  networkRef: {name: net-${i}}\n  cidr: 10.${i}.0.0/24\n`);
      repo.write({ [`${ns}/all.yaml`]: docs.join('---\n') });
    }
    const sha = repo.commit('24 networks, 24 subnets');
    repo.push();
    agent.configure([{ name: 'crash', source: { git: { url: repo.url, ref: { branch: 'main' }, username: peers.git.user, passwordEnv: 'KS_TEST_GIT_PASSWORD' } }, interval: '5s', retryInterval: '2s' }]);
    const env = { KS_TEST_GIT_PASSWORD: peers.git.password };
    // The engine logs "create  <address>" before each create. At the 6th, the agent is frozen (SIGSTOP, from the
    // handler that read the line) so the cloud can be read mid-run, then killed: the kill lands after writes began.
    let creates = 0;
    const sixth = agent.nextLine('the 6th create', (l) => l.msg.startsWith('create ') && ++creates === 6);
    await agent.start(env);
    await sixth.then(() => agent.signal('SIGSTOP'));
    const inCloud = async (): Promise<number> => {
      let n = 0;
      for (const ns of namespaces) n += (await networksIn(`${agent.owner}-${ns}`)).length + (await subnetsIn(`${agent.owner}-${ns}`)).length;
      return n;
    };
    const atKill = await inCloud();
    expect(atKill, 'the kill lands before the 48 objects are all made').toBeLessThan(48);
    expect(await agent.kill('SIGKILL')).toBe(null);
    expect(agent.lines.filter((l) => l.msg.startsWith('create ')).length).toBeLessThan(48);

    await agent.start(env);
    await agent.waitFor('crash', `applied ${sha}`, applied(sha), 180_000);
    const all = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`).sort();
    for (const ns of namespaces) {
      const nets = await networksIn(`${agent.owner}-${ns}`);
      // Exact names, each once: no duplicate from the create the kill interrupted.
      expect(names(nets)).toEqual(all('net', perNamespace));
      expect(names(await subnetsIn(`${agent.owner}-${ns}`))).toEqual(all('sub', perNamespace));
      for (const n of nets) expect(n.description).toContain(`[kupenstack ${agent.owner}-crash Network/${n.name}`);
    }

    // SIGTERM in the middle of a prune: the agent finishes or abandons the step within the grace period, exits 0, and a restart converges.
    for (const ns of namespaces) {
      const docs: string[] = [];
      for (let i = 0; i < 8; i++) docs.push(net(`net-${i}`, ns), `${head('Subnet', `sub-${i}`, ns)}  networkRef: {name: net-${i}}\n  cidr: 10.${i}.0.0/24\n`);
      repo.write({ [`${ns}/all.yaml`]: docs.join('---\n') });
    }
    const smaller = repo.commit('a third fewer');
    repo.push();
    // The prune logs "delete  <address> (<id>)" before each delete: at the first one the agent is frozen (SIGSTOP from
    // the handler that read the line), the cloud shows the prune unfinished, then SIGTERM lands in the middle of it.
    await agent.nextLine('the first delete of the prune', (l) => l.msg.startsWith('delete ')).then(() => agent.signal('SIGSTOP'));
    expect(await inCloud(), 'SIGTERM lands before the prune is done (2 × 8 networks + 8 subnets left)').toBeGreaterThan(2 * 16);
    const termAt = Date.now();
    // Pending while stopped, delivered the moment it resumes.
    agent.signal('SIGTERM');
    agent.signal('SIGCONT');
    expect(await agent.exit()).toBe(0);
    expect(Date.now() - termAt).toBeLessThan(30_000);
    expect(agent.lines.at(-1)?.msg).toBe('stopped');
    await agent.start(env);
    await agent.waitFor('crash', `applied ${smaller}`, applied(smaller), 180_000);
    for (const ns of namespaces) {
      expect(names(await networksIn(`${agent.owner}-${ns}`))).toEqual(all('net', 8));
      expect(names(await subnetsIn(`${agent.owner}-${ns}`))).toEqual(all('sub', 8));
    }
    expect(await agent.kill('SIGTERM')).toBe(0);
  });
});

describe('kupenstack agent: two Syncs in one agent are isolated', () => {
  const agent = new AgentProcess();
  const good = new TestRepo('agent-good');
  const broken = new TestRepo('agent-broken');

  afterAll(async () => {
    await agent.dispose(['good', 'broken']);
    good.dispose();
    broken.dispose();
  });

  it('one Sync broken (an invalid revision from the start), the other keeps applying', async () => {
    broken.write({ 'iso-b/bad.yaml': `${head('Network', 'x', 'iso-b')}  mtu: many\n` });
    broken.commit('invalid from the start');
    broken.push();
    good.write({ 'iso-g/n1.yaml': net('n1', 'iso-g') });
    const g1 = good.commit('n1');
    good.push();
    const secret = randomUUID();
    const secretFile = join(agent.dir, 'secret');
    writeFileSync(secretFile, secret);
    const creds = { username: peers.git.user, passwordEnv: 'KS_TEST_GIT_PASSWORD' };
    agent.configure([
      { name: 'good', source: { git: { url: good.url, ref: { branch: 'main' }, ...creds } }, interval: '1m', retryInterval: '2s', webhook: { secretFile } },
      { name: 'broken', source: { git: { url: broken.url, ref: { branch: 'main' }, ...creds } }, interval: '1m', retryInterval: '1s' },
    ]);
    await agent.start({ KS_TEST_GIT_PASSWORD: peers.git.password });
    good.installPushHook(`${agent.base}/hooks/good`, secret);

    await agent.waitFor('good', `applied ${g1}`, applied(g1));
    const b = await agent.waitFor('broken', 'rejected', readyReason('ValidationFailed'));
    expect(agent.ready(b).message).toMatch(/iso-b\/bad\.yaml:7/);
    const readyz = (await (await agent.get('/readyz')).json()) as { status: string; syncs: Record<string, { ready: boolean; reason: string }> };
    expect(readyz).toMatchObject({ status: 'not ready', syncs: { good: { ready: true }, broken: { ready: false, reason: 'ValidationFailed' } } });

    good.write({ 'iso-g/n2.yaml': net('n2', 'iso-g') });
    const g2 = good.commit('n2');
    good.push();
    await agent.waitFor('good', `applied ${g2}`, applied(g2));
    expect(names(await networksIn(`${agent.owner}-iso-g`))).toEqual(['n1', 'n2']);
    expect(await networksIn(`${agent.owner}-iso-b`)).toEqual([]);
    expect((await agent.status('broken')).lastAppliedRevision).toBeUndefined();
    await agent.kill('SIGTERM');
  });
});

describe('kupenstack agent: drift correction while the newest revision is rejected', () => {
  const agent = new AgentProcess();
  const dir = join(agent.dir, 'manifests');

  afterAll(async () => {
    await agent.dispose(['local']);
  });

  it('re-applies the last good revision (a directory source, 3 s interval), never the rejected one, and keeps saying why it is rejected', async () => {
    mkdirSync(join(dir, 'drift'), { recursive: true });
    writeFileSync(join(dir, 'drift/a.yaml'), net('keep-me', 'drift'));
    agent.configure([{ name: 'local', source: { directory: { path: dir } }, interval: '3s', retryInterval: '3s' }]);
    await agent.start();
    const good = await agent.waitFor('local', 'first apply', (s) => s.lastAppliedRevision !== undefined && s.conditions.some((c) => c.type === 'Ready' && c.status === 'True'));
    const project = `${agent.owner}-drift`;
    expect(names(await networksIn(project))).toEqual(['keep-me']);

    // A bad revision: a valid new network beside an invalid file, and keep-me gone from the files.
    writeFileSync(join(dir, 'drift/b.yaml'), net('not-me', 'drift'));
    writeFileSync(join(dir, 'drift/bad.yaml'), `${head('Network', 'bad', 'drift')}  mtu: "high"\n`);
    rmSync(join(dir, 'drift/a.yaml'));
    await agent.waitFor('local', 'rejected', readyReason('ValidationFailed'));

    // Drift: someone deletes keep-me behind the agent's back; the next timed run puts it back from the last good revision.
    const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
    const [gone] = (await networksIn(project)).filter((n) => n.name === 'keep-me');
    await cloud.client('network').remove(`/networks/${gone!.id}`);
    // The evidence is Neutron's: keep-me is back under a new id. A timed run may already have started
    // when the delete landed, so runs are told apart from the first apply, not by the clock.
    const back = Date.now() + 60_000;
    // honest: polling; the loop ends only when Neutron shows keep-me back (the proof), the expect is its timeout
    while (!(await networksIn(project)).some((n) => n.name === 'keep-me' && n.id !== gone!.id)) {
      expect(Date.now(), 'keep-me recreated within 60 s').toBeLessThan(back);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const firstApply = good.history.find((h) => h.revision === good.lastAppliedRevision)!;
    const s = await agent.waitFor('local', 'drift corrected', (x) => x.history.some((h) => h.revision === good.lastAppliedRevision && h.startedAt !== firstApply.startedAt && h.result === 'Succeeded' && (h.counts?.created ?? 0) >= 1), 30_000);
    expect(names(await networksIn(project))).toEqual(['keep-me']);
    expect(s.lastAppliedRevision).toBe(good.lastAppliedRevision);
    expect(agent.ready(s).reason).toBe('ValidationFailed');
    expect(agent.ready(s).message).toMatch(/drift\/bad\.yaml:7/);
    await agent.kill('SIGTERM');
  });
});
