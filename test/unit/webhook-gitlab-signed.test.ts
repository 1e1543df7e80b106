import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { identify, verify, WebhookError } from '../../agent/hooks/git-webhook.ts';

// GitLab's signing token (Standard Webhooks): the body and its time authenticated, where
// X-Gitlab-Token only names the sender (issue 47: for bearer senders, prefer HMAC).
const key = randomBytes(32);
const token = `whsec_${key.toString('base64')}`;
const now = Date.parse('2026-12-01T12:00:00Z');
const body = Buffer.from(JSON.stringify({ ref: 'refs/heads/main', after: 'a'.repeat(40), project: { git_http_url: 'https://gitlab.example/t/apps.git' } }));
const sign = (id: string, ts: number, b: Buffer = body, k: Buffer = key): string => `v1,${createHmac('sha256', k).update(`${id}.${ts}.`).update(b).digest('base64')}`;
const headers = (over: Record<string, string> = {}): Record<string, string> => ({
  'x-gitlab-event': 'Push Hook',
  'webhook-id': 'msg-1',
  'webhook-timestamp': String(now / 1000),
  'webhook-signature': sign('msg-1', now / 1000),
  ...over,
});
const refusal = (h: Record<string, string>, b: Buffer = body): string => {
  try {
    verify(identify(h, b), h, b, token, now);
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookError);
    expect((err as WebhookError).status).toBe(401);
    return (err as Error).message;
  }
  return 'verified';
};

describe('GitLab signed webhooks (webhook-signature)', () => {
  it('a signature over id, timestamp and body under the signing token verifies; any of several v1 signatures may be the one', () => {
    expect(refusal(headers())).toBe('verified');
    expect(refusal(headers({ 'webhook-signature': `v1,AAAA ${sign('msg-1', now / 1000)}` }))).toBe('verified');
  });

  it('another body, id, key or time is refused; the signature is judged alone (a right X-Gitlab-Token does not rescue it)', () => {
    const other = Buffer.concat([body, Buffer.from(' ')]);
    expect(refusal(headers(), other)).toMatch(/does not match/);
    expect(refusal(headers({ 'webhook-id': 'msg-2' }))).toMatch(/does not match/);
    expect(refusal(headers({ 'webhook-signature': sign('msg-1', now / 1000, body, randomBytes(32)), 'x-gitlab-token': token }))).toMatch(/does not match/);
    const old = now / 1000 - 301;
    expect(refusal(headers({ 'webhook-timestamp': String(old), 'webhook-signature': sign('msg-1', old) }))).toMatch(/more than 5 minutes/);
    expect(refusal(headers({ 'webhook-timestamp': 'soon' }))).toMatch(/webhook-timestamp in seconds/);
  });
});
