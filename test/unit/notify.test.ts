import { createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../agent/config/config-error.ts';
import { loadConfig } from '../../agent/sync/config-file.ts';
import { configureEgress } from '../../agent/net/egress.ts';
import { makePolicy, parseAllowRule } from '../../agent/net/egress-policy.ts';
import { commitOf, linkFree, makeNotice } from '../../agent/notify/notice.ts';
import { Notifier } from '../../agent/notify/notifier.ts';
import { gitea } from '../../agent/notify/providers/gitea.ts';
import { github } from '../../agent/notify/providers/github.ts';
import { gitlab } from '../../agent/notify/providers/gitlab.ts';
import { slack } from '../../agent/notify/providers/slack.ts';
import { teams } from '../../agent/notify/providers/teams.ts';
import { signatureHeader, webhook } from '../../agent/notify/providers/webhook.ts';
import { repositoryOf } from '../../agent/notify/target.ts';
import { Throttle } from '../../agent/notify/throttle.ts';
import { createLogger } from '../../agent/telemetry/logger.ts';

const sha = 'a'.repeat(40);
const revision = `main@sha1:${sha}`;
const rejected = makeNotice('rejected', 'tenants', revision, 'revision rejected, nothing from it applied', 'team-a/net.yaml:4:3: spec.mtu must be >= 68');

describe('notification providers: the documented request shapes', () => {
  it('the generic webhook carries the notice and an HMAC-SHA256 of the raw body in X-KupenStack-Signature', () => {
    const r = webhook(rejected, { url: 'https://hooks.example/in', secret: 's3cret' })!;
    expect(JSON.parse(r.body)).toEqual(rejected);
    expect(r.headers[signatureHeader]).toBe(`sha256=${createHmac('sha256', 's3cret').update(r.body).digest('hex')}`);
    expect(r.headers['x-kupenstack-event']).toBe('rejected');
    expect(webhook(rejected, { url: 'https://hooks.example/in' })!.headers[signatureHeader]).toBeUndefined();
  });

  it('Slack: one mrkdwn text with &, < and > escaped; Teams: a message with one Adaptive Card', () => {
    const n = makeNotice('held', 'tenants', revision, '3 deletions held: a<b & c>d');
    expect(JSON.parse(slack(n, { url: 'https://hooks.slack.example/x' })!.body)).toEqual({ text: `:warning: *Sync tenants: deletions held ${revision}*\n3 deletions held: a&lt;b &amp; c&gt;d` });
    const card = JSON.parse(teams(rejected, { url: 'https://teams.example/x' })!.body) as { type: string; attachments: { contentType: string; content: { type: string; body: { text: string }[] } }[] };
    expect(card.type).toBe('message');
    expect(card.attachments[0]!.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(card.attachments[0]!.content.body.map((b) => b.text)).toEqual([`Sync tenants: rejected ${revision}`, rejected.summary, rejected.diagnostic]);
  });

  it('commit status on GitHub, GitLab and Gitea/Forgejo: path, auth header, state and a description with the first diagnostic', () => {
    const t = { url: 'https://forge.example/api/', repository: 'team/infra', secret: 'tok' };
    const gh = github(rejected, t)!;
    expect(gh.url).toBe(`https://forge.example/api/repos/team/infra/statuses/${sha}`);
    expect(gh.headers.authorization).toBe('Bearer tok');
    expect(JSON.parse(gh.body)).toEqual({ state: 'failure', context: 'kupenstack/tenants', description: 'revision rejected, nothing from it applied: team-a/net.yaml:4:3: spec.mtu must be >= 68' });
    const gl = gitlab(rejected, t)!;
    expect(gl.url).toBe(`https://forge.example/api/projects/team%2Finfra/statuses/${sha}`);
    expect(gl.headers['private-token']).toBe('tok');
    expect(JSON.parse(gl.body)).toMatchObject({ state: 'failed', name: 'kupenstack/tenants' });
    const gt = gitea(makeNotice('started', 'tenants', revision, 'applying'), t)!;
    expect(gt.headers.authorization).toBe('token tok');
    expect(JSON.parse(gt.body)).toEqual({ state: 'pending', context: 'kupenstack/tenants', description: 'applying' });
    expect(JSON.parse(github(makeNotice('applied', 'tenants', revision, 'ok'), t)!.body)).toMatchObject({ state: 'success' });
    // A folder's content revision is no commit: nothing to say to a forge.
    expect(github(makeNotice('applied', 'tenants', 'sha256:abc', 'ok'), t)).toBeUndefined();
  });

  it('summaries are link-free and descriptions fit GitHub\'s 140 characters', () => {
    expect(linkFree('cannot fetch https://user:pw@git.example/x.git: 401')).toBe('cannot fetch <link removed> 401');
    const long = makeNotice('failed', 's', revision, 'x'.repeat(300));
    expect((JSON.parse(github(long, { url: 'https://f', repository: 'a/b' })!.body) as { description: string }).description).toHaveLength(140);
    expect(commitOf(revision)).toBe(sha);
    expect(repositoryOf('http://127.0.0.1:8180/git/demo.git')).toBe('git/demo');
  });
});

describe('dedup and rate limit', () => {
  it('the same event, Sync and revision goes out once per window; a window later it goes again; a flood is cut at perMinute', () => {
    const t = new Throttle({ windowMs: 60_000, perMinute: 3 });
    expect(t.judge('rejected s r1', 0)).toBe('send');
    expect(t.judge('rejected s r1', 59_999)).toBe('duplicate');
    expect(t.judge('rejected s r1', 60_000)).toBe('send');
    expect(t.judge('failed s r1', 60_001)).toBe('send');
    expect(t.judge('failed s r2', 60_002)).toBe('send');
    expect(t.judge('failed s r3', 60_003)).toBe('rate-limited');
    expect(t.judge('failed s r3', 120_003)).toBe('send');
  });
});

describe('the Notifier: egress policy, secrets never logged', () => {
  const received: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(201).end('{}');
    });
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  afterEach(() => configureEgress(undefined));

  function notifier(secretValue: string): { n: Notifier; logs: () => string } {
    let out = '';
    const sink = new Writable({ write: (c: Buffer, _e, cb) => ((out += c.toString()), cb()) });
    const secrets = { get: () => Promise.resolve(secretValue) };
    // The Slack address is the credential: it comes from the secret, with a path that must never be logged.
    const n = new Notifier({ targets: [{ provider: 'slack', events: [], secret: { name: 'slack' } }, { provider: 'github', url: base, repository: 'team/infra', events: ['applied'], secret: { name: 'gh' } }], secrets, log: createLogger('debug', 'json', sink), egressNamespace: '(Sync s)' });
    return { n, logs: () => out };
  }

  it('loopback is refused without an admin rule, nothing is sent, and the log names the host but neither the address path nor the token', async () => {
    configureEgress({ policy: makePolicy({ ownAddresses: [] }), labelsOf: () => ({}) });
    const { n, logs } = notifier(`${base}/services/T000/B000/XXXXSECRETPATH`);
    received.length = 0;
    n.notify(makeNotice('applied', 's', revision, 'ok'));
    await n.idle();
    expect(received).toEqual([]);
    expect(logs()).toContain('egress refused');
    expect(logs()).toContain(`slack at ${base}`);
    expect(logs()).not.toContain('XXXXSECRETPATH');
  });

  it('with the admin rule that opens loopback, both targets receive; the token reaches the forge and never the log', async () => {
    configureEgress({ policy: makePolicy({ ownAddresses: [], allow: [parseAllowRule('*=>127.0.0.1/32')] }), labelsOf: () => ({}) });
    const { n, logs } = notifier(`${base}/services/T000/B000/XXXXSECRETPATH`);
    received.length = 0;
    n.notify(makeNotice('applied', 's', revision, 'ok'));
    n.notify(makeNotice('applied', 's', revision, 'ok')); // a duplicate: sent once
    await n.idle();
    expect(received.map((r) => r.path).sort()).toEqual(['/repos/team/infra/statuses/' + sha, '/services/T000/B000/XXXXSECRETPATH']);
    expect(received.find((r) => r.path.startsWith('/repos'))!.headers.authorization).toBe(`Bearer ${base}/services/T000/B000/XXXXSECRETPATH`);
    expect(logs()).toContain('notice sent');
    expect(logs()).not.toContain('XXXXSECRETPATH');
  });

  it('grep: no log call in agent/notify/ passes a URL, a request or a secret', () => {
    const dir = join(import.meta.dirname, '../../agent/notify');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(files).toContain('notifier.ts');
    const logCalls = files.flatMap((f) => readFileSync(join(dir, f), 'utf8').match(/log\.(?:debug|info|warn|error)\([^;]*\);/g) ?? []);
    expect(logCalls.length).toBeGreaterThan(2);
    // hostOf() keeps scheme and host only: the one sanctioned way to name a target.
    for (const call of logCalls) expect(call.replace(/hostOf\([^)]*\)/g, 'HOST')).not.toMatch(/\b(secret|token|req\.url|t\.url|url:|headers|body)\b/);
  });
});

/*
 * DNS rebinding: the gate judges the address a name resolves to, so the notice must go to THAT address
 * through the gate's own connection (its dispatcher), not be resolved again by fetch. Emulated on
 * loopback: the gate's resolver answers 127.0.0.2 (the only address the admin's rule opens), while the
 * system's resolver answers 127.0.0.1 for the same name (localhost): a notice fetched without the
 * dispatcher lands on the other listener, one the policy never judged.
 */
describe('the Notifier: sent where the egress gate judged', () => {
  const judged: string[] = [];
  const unjudged: string[] = [];
  const listener = (into: string[]) =>
    createServer((req, res) => {
      req.resume();
      into.push(req.url ?? '');
      res.writeHead(201).end('{}');
    });
  const good = listener(judged);
  const other = listener(unjudged);
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((r) => good.listen(0, '127.0.0.2', r));
    port = (good.address() as AddressInfo).port;
    await new Promise<void>((r, j) => other.once('error', j).listen(port, '127.0.0.1', r));
  });
  afterAll(async () => {
    await new Promise<void>((r) => good.close(() => r()));
    await new Promise<void>((r) => other.close(() => r()));
  });
  afterEach(() => configureEgress(undefined));

  it('connects to the address the gate resolved and judged, with no second lookup outside it', async () => {
    const lookups: string[] = [];
    const resolver = (host: string): Promise<string[]> => {
      lookups.push(host);
      return Promise.resolve(host === 'localhost' ? ['127.0.0.2'] : []);
    };
    configureEgress({ policy: makePolicy({ ownAddresses: [], allow: [parseAllowRule('*=>127.0.0.2/32')] }), labelsOf: () => ({}), resolver });
    let out = '';
    const sink = new Writable({ write: (c: Buffer, _e, cb) => ((out += c.toString()), cb()) });
    const n = new Notifier({ targets: [{ provider: 'webhook', url: `http://localhost:${port}/hook`, events: [] }], secrets: { get: () => Promise.resolve('') }, log: createLogger('debug', 'json', sink), egressNamespace: '(Sync s)' });
    n.notify(makeNotice('applied', 's', revision, 'ok'));
    await n.idle();
    expect(out).toContain('notice sent');
    expect(judged).toEqual(['/hook']);
    expect(unjudged).toEqual([]);
    expect(lookups.length).toBeGreaterThan(0);
    expect(new Set(lookups)).toEqual(new Set(['localhost']));
  });
});

describe('notify: in kupenstack.yaml', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ks-notify-'));
  const load = (notify: string): ReturnType<typeof loadConfig> => {
    const f = join(dir, 'kupenstack.yaml');
    writeFileSync(f, `owner: lab\ncloud: c\nsyncs:\n  - name: main\n    source:\n      git: {url: 'http://127.0.0.1:8180/git/demo.git', ref: {branch: main}}\n    notify:\n${notify}`);
    return loadConfig(f);
  };

  it('reads targets: the repository defaults to the Git URL\'s path, the secret is named, never read', () => {
    const c = load("      - {provider: gitea, url: 'http://127.0.0.1:3000/api/v1', secretEnv: GITEA_TOKEN}\n      - {provider: slack, secretFile: /run/slack-url, events: [held, failed]}\n");
    expect(c.syncs?.[0]?.notify).toEqual([
      { provider: 'gitea', url: 'http://127.0.0.1:3000/api/v1', repository: 'git/demo', events: [], secret: { env: 'GITEA_TOKEN' } },
      { provider: 'slack', events: ['held', 'failed'], secret: { file: '/run/slack-url' } },
    ]);
  });

  it('a target missing what its provider needs is refused naming the file, the line and the fix', () => {
    const refused = (notify: string): string => {
      try {
        load(notify);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message.replace(join(dir, 'kupenstack.yaml'), 'FILE');
      }
      throw new Error('expected a ConfigError');
    };
    expect(refused('      - {provider: slack}\n')).toMatch(/^FILE:8:\d+ .*slack needs its incoming-webhook address: put it in a Secret's token key/);
    expect(refused('      - {provider: github, secretEnv: A, secretFile: /b}\n')).toMatch(/^FILE:8:\d+ .*give one of secretRef, secretEnv or secretFile/);
    expect(refused('      - {provider: matrix, url: "https://m"}\n')).toMatch(/^FILE:8:\d+ .*(webhook|github)/);
  });
});
