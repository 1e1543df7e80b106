import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DeliveryLog, identify, normalizeRepoUrl, parsePush, refMatches, verify, WebhookError } from '../../agent/hooks/git-webhook.ts';

const secret = 'hook-secret-123';
const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after: 'a'.repeat(40), repository: { clone_url: 'https://git.example.com/org/app.git', ssh_url: 'git@git.example.com:org/app.git' } }));
const hmac = (s: string, b: Buffer): string => createHmac('sha256', s).update(b).digest('hex');

function rejects(fn: () => void, status: number, text: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookError);
    expect((err as WebhookError).status).toBe(status);
    expect((err as Error).message).toMatch(text);
    expect((err as Error).message).not.toContain(secret);
    return;
  }
  throw new Error('expected a WebhookError');
}

describe('webhook signatures', () => {
  it('GitHub: X-Hub-Signature-256 HMAC-SHA256 of the raw body', () => {
    const headers = { 'x-github-event': 'push', 'x-github-delivery': 'd-1', 'x-hub-signature-256': `sha256=${hmac(secret, body)}` };
    const d = identify(headers, body);
    expect(d).toEqual({ provider: 'github', id: 'd-1', event: 'push' });
    expect(() => verify(d, headers, body, secret)).not.toThrow();
    rejects(() => verify(d, headers, body, 'other-secret'), 401, /does not match/);
    rejects(() => verify(d, headers, Buffer.concat([body, Buffer.from(' ')]), secret), 401, /does not match/);
    rejects(() => verify(d, { ...headers, 'x-hub-signature-256': hmac(secret, body) }, body, secret), 401, /does not match/);
    rejects(() => verify(d, { 'x-github-event': 'push' }, body, secret), 401, /without x-hub-signature-256/);
  });

  it('Gitea: X-Gitea-Signature is the bare hex HMAC, and Gitea is recognised despite its X-GitHub-* compatibility headers', () => {
    const headers = { 'x-gitea-event': 'push', 'x-github-event': 'push', 'x-gitea-delivery': 'g-7', 'x-github-delivery': 'g-7', 'x-gitea-signature': hmac(secret, body) };
    const d = identify(headers, body);
    expect(d.provider).toBe('gitea');
    expect(d.id).toBe('g-7');
    expect(() => verify(d, headers, body, secret)).not.toThrow();
    rejects(() => verify(d, { ...headers, 'x-gitea-signature': hmac('nope', body) }, body, secret), 401, /Gitea/);
  });

  it('GitLab: X-Gitlab-Token compared as a secret token; delivery id from X-Gitlab-Event-UUID', () => {
    const headers = { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': secret, 'x-gitlab-event-uuid': 'u-1' };
    const d = identify(headers, body);
    expect(d).toEqual({ provider: 'gitlab', id: 'u-1', event: 'Push Hook' });
    expect(() => verify(d, headers, body, secret)).not.toThrow();
    rejects(() => verify(d, { ...headers, 'x-gitlab-token': `${secret}x` }, body, secret), 401, /X-Gitlab-Token does not match/);
    rejects(() => verify(d, { ...headers, 'x-gitlab-token': '' }, body, secret), 401, /does not match/);
    rejects(() => verify(d, { 'x-gitlab-event': 'Push Hook' }, body, secret), 401, /without X-Gitlab-Token/);
  });

  it('an unknown sender is refused', () => {
    rejects(() => identify({ 'content-type': 'application/json' }, body), 400, /not a GitHub, Gitea or GitLab webhook/);
  });

  it('without a delivery id the body hash stands in, so an identical replay is still caught', () => {
    const a = identify({ 'x-gitlab-event': 'Push Hook' }, body);
    const b = identify({ 'x-gitlab-event': 'Push Hook' }, body);
    expect(a.id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a.id).toBe(b.id);
  });
});

describe('webhook payloads', () => {
  it('reads ref and repository URLs of GitHub/Gitea and GitLab pushes; other events are not pushes', () => {
    const gh = parsePush({ provider: 'github', id: '1', event: 'push' }, body)!;
    expect(gh.ref).toBe('refs/heads/main');
    expect(gh.repoUrls).toContain('https://git.example.com/org/app.git');
    const gl = parsePush({ provider: 'gitlab', id: '1', event: 'Push Hook' }, Buffer.from(JSON.stringify({ ref: 'refs/heads/dev', project: { git_http_url: 'https://gitlab.example.com/a/b.git' } })))!;
    expect(gl).toMatchObject({ ref: 'refs/heads/dev', repoUrls: ['https://gitlab.example.com/a/b.git'] });
    expect(parsePush({ provider: 'github', id: '1', event: 'ping' }, Buffer.from('{}'))).toBeUndefined();
    const del = parsePush({ provider: 'github', id: '1', event: 'delete' }, Buffer.from(JSON.stringify({ ref: 'main', ref_type: 'branch', repository: {} })))!;
    expect(del.ref).toBe('refs/heads/main');
    expect(() => parsePush({ provider: 'github', id: '1', event: 'push' }, Buffer.from('ref=main'))).toThrow(/not JSON/);
  });

  it('matches repository URLs across spellings and refs against what a Sync follows', () => {
    expect(normalizeRepoUrl('https://user@Git.Example.com/org/app.git/')).toBe(normalizeRepoUrl('https://git.example.com/org/app'));
    expect(normalizeRepoUrl('git@git.example.com:org/app.git')).toBe(normalizeRepoUrl('https://git.example.com/org/app.git'));
    expect(normalizeRepoUrl('https://git.example.com/org/app')).not.toBe(normalizeRepoUrl('https://git.example.com/org/app2'));
    expect(refMatches('refs/heads/main', { branch: 'main' })).toBe(true);
    expect(refMatches('refs/heads/dev', { branch: 'main' })).toBe(false);
    expect(refMatches('refs/tags/v1', { tag: 'v1' })).toBe(true);
    expect(refMatches('refs/tags/v1.2.0', { semver: '^1' })).toBe(true);
    expect(refMatches('refs/heads/main', { commit: 'a'.repeat(40) })).toBe(false);
  });
});

describe('DeliveryLog', () => {
  it('reports a replay, and forgets the oldest ids past its capacity', () => {
    const log = new DeliveryLog(3);
    expect(log.remember('a')).toBe(true);
    expect(log.remember('a')).toBe(false);
    log.remember('b');
    log.remember('c');
    log.remember('d');
    // Capacity 3: d pushed out a (the oldest); a comes back as new and pushes out b.
    expect(log.remember('a')).toBe(true);
    expect(log.remember('c')).toBe(false);
    expect(log.remember('b')).toBe(true);
  });
});
