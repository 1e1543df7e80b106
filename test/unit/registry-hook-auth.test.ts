import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DeliveryLog, deliveryMemoryMs } from '../../agent/hooks/git-webhook.ts';
import { handleRegistryHook, maxEventAgeMs, signatureHeader, type RegistryHookFollower } from '../../agent/hooks/registry-hook.ts';
import { isLoopback, MetricsGate } from '../../agent/telemetry/metrics-access.ts';

// Issue 47, hooks: a registry's body authenticated when the sender can sign it, a secret
// never taken from the URL, replays told by the body; /metrics not for every pod.
const secret = 'registry-auth-secret-5';
const now = Date.now();
const hmac = (body: Buffer, key = secret): string => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;

function follower(): RegistryHookFollower & { told: number } {
  const f = { name: 's', told: 0, secret: () => Promise.resolve(secret), moved: () => (f.told++, true), trigger: () => undefined };
  return f;
}

const distribution = (): Buffer =>
  Buffer.from(JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date(now).toISOString(), action: 'push', target: { repository: 'team/os', tag: 'stable' }, request: { host: 'registry.example' } }] }));

describe('registry notifications: how the sender authenticates', () => {
  it('X-Kupenstack-Signature-256 (HMAC of the body) authenticates any sender without a bearer; a wrong one is refused even beside the right bearer', async () => {
    const body = distribution();
    const ok = await handleRegistryHook({ body, headers: { [signatureHeader]: hmac(body) }, query: new URLSearchParams() }, [follower()], new DeliveryLog(), now);
    expect(ok).toMatchObject({ status: 202, result: 'triggered', sender: 'distribution' });
    const f = follower();
    for (const signature of [hmac(body, 'another-key'), hmac(Buffer.concat([body, Buffer.from(' ')])), 'sha256=00']) {
      const a = await handleRegistryHook(
        { body, headers: { [signatureHeader]: signature, authorization: `Bearer ${secret}` }, query: new URLSearchParams() },
        [f],
        new DeliveryLog(),
        now,
      );
      expect(a.status, signature).toBe(401);
    }
    expect(f.told).toBe(0);
  });

  it('?token= is refused even when it is the secret, with the way to send it instead; the follower is never told', async () => {
    const f = follower();
    const a = await handleRegistryHook({ body: distribution(), headers: {}, query: new URLSearchParams({ token: secret }) }, [f], new DeliveryLog(), now);
    expect(a.status).toBe(401);
    expect(String(a.body.error)).toMatch(/\?token=\) is refused.*Authorization: Bearer <secret>/);
    expect(JSON.stringify(a.body)).not.toContain(secret);
    // With the right bearer too: a secret in the URL is refused whatever else comes with it.
    const both = await handleRegistryHook({ body: distribution(), headers: { authorization: `Bearer ${secret}` }, query: new URLSearchParams({ token: secret }) }, [f], new DeliveryLog(), now);
    expect(both.status).toBe(401);
    expect(f.told).toBe(0);
  });

  it('a signed GitHub package event replayed with a new X-GitHub-Delivery is a replay: the key is the signed body', async () => {
    const body = Buffer.from(
      JSON.stringify({ action: 'published', package: { name: 'disk', namespace: 'octo', package_type: 'CONTAINER', package_version: { version: 'sha256:ee', package_url: 'ghcr.io/octo/disk:1.0.0', container_metadata: { tag: { name: '1.0.0', digest: 'sha256:ee' } } } } }),
    );
    const log = new DeliveryLog();
    const f = follower();
    const deliver = (): ReturnType<typeof handleRegistryHook> =>
      handleRegistryHook({ body, headers: { 'x-github-event': 'package', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': hmac(body) }, query: new URLSearchParams() }, [f], log, now);
    expect((await deliver()).result).toBe('triggered');
    expect(await deliver()).toMatchObject({ status: 200, result: 'replayed' });
    expect(f.told).toBe(1);
  });
});

describe('/metrics access (telemetry/metrics-access.ts)', () => {
  const from = (remoteAddress: string, headers: Record<string, string> = {}): IncomingMessage => ({ socket: { remoteAddress }, headers }) as unknown as IncomingMessage;

  it('by default only loopback reads it; another pod is refused with how to allow it', async () => {
    const gate = new MetricsGate();
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '127.3.4.5']) expect(await gate.judge(from(a)), a).toBeUndefined();
    for (const a of ['10.244.1.7', 'fd00::5', '::ffff:10.0.0.1', '0.0.0.0', '::']) {
      const refused = await gate.judge(from(a));
      expect(refused?.status, a).toBe(403);
      expect(refused?.error, a).toMatch(/--metrics-token-file.*--metrics-open/);
    }
    expect(await new MetricsGate({ open: true }).judge(from('10.244.1.7'))).toBeUndefined();
  });

  it('with a token file: another host needs its token, exactly; an unreadable file refuses them all (503)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrics-token-'));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'metrics-token-9\n');
    const gate = new MetricsGate({ tokenFile, open: true });
    const pod = '10.244.1.7';
    for (const auth of [undefined, 'Bearer wrong', 'metrics-token-9', 'Basic bWV0cmljcy10b2tlbi05', 'Bearer metrics-token-9x']) {
      const refused = await gate.judge(from(pod, auth === undefined ? {} : { authorization: auth }));
      expect(refused?.status, String(auth)).toBe(401);
      expect(refused?.error).not.toContain('metrics-token-9');
    }
    expect(await gate.judge(from(pod, { authorization: 'Bearer metrics-token-9' }))).toBeUndefined();
    expect(await gate.judge(from('127.0.0.1'))).toBeUndefined();
    const unreadable = new MetricsGate({ tokenFile: join(dir, 'missing') });
    expect(await unreadable.judge(from(pod, { authorization: 'Bearer metrics-token-9' }))).toMatchObject({ status: 503 });
    expect(isLoopback(undefined)).toBe(false);
    expect(isLoopback('localhost')).toBe(false);
  });

});

describe('the delivery log remembers for a while', () => {
  it('a replay inside the memory is refused (a storm keeps it remembered); after it, the same body is a delivery again', () => {
    const log = new DeliveryLog(10);
    const t0 = Date.parse('2026-12-01T12:00:00Z');
    expect(log.remember('k', t0)).toBe(true);
    expect(log.remember('k', t0 + deliveryMemoryMs - 1)).toBe(false);
    // The replay just now refreshed it: still a replay a full memory after the first delivery.
    expect(log.remember('k', t0 + deliveryMemoryMs + 1)).toBe(false);
    expect(log.remember('k', t0 + 3 * deliveryMemoryMs)).toBe(true);
    // Longer than a dated registry event stays believable (15 minutes old, 5 of skew): those are refused as stale after that.
    expect(deliveryMemoryMs).toBeGreaterThan(maxEventAgeMs + 5 * 60_000);
  });
});
