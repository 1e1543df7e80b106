import { describe, expect, it } from 'vitest';
import { ApiContact } from '../../../agent/controller/api-contact.ts';
import { serveHealth } from '../../../agent/controller/health.ts';

/** A clock the test moves, and a check whose answer the test decides. */
function rig(staleAfterMs = 60_000): { contact: ApiContact; advance: (ms: number) => void; answer: (ok: boolean | 'hang') => void } {
  let now = 1_000_000;
  let mode: boolean | 'hang' = true;
  const contact = new ApiContact({
    periodMs: 10_000,
    staleAfterMs,
    now: () => now,
    check: () => (mode === 'hang' ? new Promise<void>(() => {}) : mode ? Promise.resolve() : Promise.reject(Object.assign(new Error('Forbidden: system:serviceaccount:x:y cannot list namespaces'), { code: 403 }))),
  });
  return { contact, advance: (ms) => (now += ms), answer: (ok) => (mode = ok) };
}

describe('ApiContact (what /healthz says of the API server)', () => {
  it('is healthy from start, through a blip shorter than the window, and unhealthy once nothing was answered for longer', async () => {
    const { contact, advance, answer } = rig();
    expect(contact.verdict()).toEqual({ ok: true, sinceSeconds: 0 });
    await contact.probe();
    answer(false);
    advance(30_000);
    await contact.probe();
    // A blip: refused for 30 s, within the 60 s window.
    expect(contact.verdict()).toMatchObject({ ok: true, sinceSeconds: 30, lastError: 'HTTP 403' });
    advance(31_000);
    await contact.probe();
    expect(contact.verdict()).toEqual({ ok: false, sinceSeconds: 61, lastError: 'HTTP 403' });
    // Answered again: healthy at once, the error forgotten.
    answer(true);
    await contact.probe();
    expect(contact.verdict()).toEqual({ ok: true, sinceSeconds: 0 });
  });

  it('a check that never returns (a wedged connection) turns unhealthy and is not sent again while it waits', () => {
    const { contact, advance, answer } = rig(20_000);
    answer('hang');
    void contact.probe();
    let sent = 0;
    const counting = new ApiContact({ periodMs: 1, staleAfterMs: 20_000, check: () => { sent++; return new Promise<void>(() => {}); } });
    void counting.probe();
    void counting.probe();
    expect(sent).toBe(1);
    advance(21_000);
    expect(contact.verdict()).toMatchObject({ ok: false, sinceSeconds: 21 });
  });

  it('the error it reports carries the status code, not the message (which may name the identity)', async () => {
    const { contact, answer } = rig();
    answer(false);
    await contact.probe();
    expect(contact.verdict().lastError).toBe('HTTP 403');
  });
});

describe('/healthz with the API contact', () => {
  it('answers 200 while the API server answers and 503 with the reason once it has not for too long; /readyz is unchanged', async () => {
    const { contact, advance, answer } = rig();
    const { server, address } = await serveHealth('127.0.0.1', 0, { ready: () => true, leader: () => false, live: () => contact.verdict() });
    try {
      const get = async (path: string): Promise<{ status: number; body: Record<string, unknown> }> => {
        const res = await fetch(`http://127.0.0.1:${address.port}${path}`);
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      expect(await get('/healthz')).toEqual({ status: 200, body: { status: 'ok', apiServerAnsweredSecondsAgo: 0 } });
      answer(false);
      advance(90_000);
      await contact.probe();
      expect(await get('/healthz')).toEqual({ status: 503, body: { status: 'no answer from the API server for 90 s', lastError: 'HTTP 403' } });
      // A follower cut off is restarted too, but readiness stays what the watches say.
      expect((await get('/readyz')).status).toBe(200);
    } finally {
      server.close();
    }
  });
});
