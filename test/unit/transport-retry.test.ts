import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCounters } from '../../agent/openstack/counters.ts';
import { OpenStackError } from '../../agent/openstack/errors.ts';
import { retryAfterMs, Transport } from '../../agent/openstack/transport.ts';

/**
 * What the OpenStack client retries (issue 16 item 1), against a loopback
 * server scripted answer by answer: a 429 for any method after its
 * Retry-After, a 5xx only for idempotent methods, a POST never after a 5xx or
 * a lost answer, and a cut JSON body is a lost answer.
 */
let server: Server;
let base: string;
/** Per path: the answers to give, in order (then 200 {}). */
const script = new Map<string, ((res: ServerResponse) => void)[]>();
const hits = new Map<string, number>();
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const path = req.url ?? '';
    const n = hits.get(path) ?? 0;
    hits.set(path, n + 1);
    const step = script.get(path)?.[n];
    if (step) step(res);
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const transport = new Transport({ counters: new ApiCounters(), verify: true, retries: 3, timeoutMs: 2_000 });
const status = (code: number, headers: Record<string, string> = {}) => (res: ServerResponse) => res.writeHead(code, { 'content-type': 'application/json', ...headers }).end('{"error":{"message":"scripted"}}');
const cut = (res: ServerResponse): void => {
  res.writeHead(201, { 'content-type': 'application/json', 'content-length': '40' });
  res.write('{"network": {"id": "abc"', () => res.destroy());
};

describe('the OpenStack transport', () => {
  it('reads Retry-After in seconds, as an HTTP date, and from a Nova message', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(Date.UTC(2030, 0, 1, 0, 0, 5)).toUTCString(), '', Date.UTC(2030, 0, 1))).toBe(5000);
    expect(retryAfterMs(null, 'Rate limit exceeded, retry after 3 seconds')).toBe(3000);
    expect(retryAfterMs(null, '')).toBeUndefined();
    expect(retryAfterMs('86400')).toBe(60_000);
  });

  it('retries a POST after a 429, waiting what Retry-After says', async () => {
    script.set('/post-429', [status(429, { 'retry-after': '1' })]);
    const started = Date.now();
    const res = await transport.send({ service: 'network', method: 'POST', url: `${base}/post-429`, json: {} });
    expect(res.status).toBe(200);
    expect(hits.get('/post-429')).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('never repeats a POST after a 503, hands the answer back', async () => {
    script.set('/post-503', [status(503)]);
    const res = await transport.send({ service: 'network', method: 'POST', url: `${base}/post-503`, json: {} });
    expect(res.status).toBe(503);
    expect(hits.get('/post-503')).toBe(1);
  });

  it('retries a PUT and a DELETE after a 5xx', async () => {
    script.set('/put-502', [status(502), status(500)]);
    script.set('/delete-503', [status(503)]);
    expect((await transport.send({ service: 'network', method: 'PUT', url: `${base}/put-502`, json: {} })).status).toBe(200);
    expect((await transport.send({ service: 'network', method: 'DELETE', url: `${base}/delete-503` })).status).toBe(200);
    expect([hits.get('/put-502'), hits.get('/delete-503')]).toEqual([3, 2]);
  });

  it('a cut JSON answer is a lost answer: a GET is retried, a POST fails with status 0 and is not repeated', async () => {
    script.set('/get-cut', [cut]);
    script.set('/post-cut', [cut]);
    const got = await transport.send({ service: 'network', method: 'GET', url: `${base}/get-cut` });
    expect(got.json).toEqual({ ok: true });
    expect(hits.get('/get-cut')).toBe(2);
    const err = await transport.send({ service: 'network', method: 'POST', url: `${base}/post-cut`, json: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenStackError);
    expect((err as OpenStackError).status).toBe(0);
    expect(hits.get('/post-cut')).toBe(1);
  });

  it('a cleanly short JSON body (a length that matches, half the document) is a lost answer too', async () => {
    script.set('/post-short', [(res) => res.writeHead(201, { 'content-type': 'application/json' }).end('{"network": {"id"')]);
    const err = await transport.send({ service: 'network', method: 'POST', url: `${base}/post-short`, json: {} }).catch((e: unknown) => e);
    expect((err as OpenStackError).status).toBe(0);
    expect((err as OpenStackError).detail).toMatch(/not valid JSON/);
    expect(hits.get('/post-short')).toBe(1);
  });

  it('a POST without an answer in time is marked timedOut (the service may still be working), a closed connection is not', async () => {
    script.set('/post-hang', [() => undefined]);
    script.set('/post-closed', [(res) => res.destroy()]);
    const hang = (await transport.send({ service: 'network', method: 'POST', url: `${base}/post-hang`, json: {}, timeoutMs: 300 }).catch((e: unknown) => e)) as OpenStackError;
    const closed = (await transport.send({ service: 'network', method: 'POST', url: `${base}/post-closed`, json: {} }).catch((e: unknown) => e)) as OpenStackError;
    expect([hang.status, hang.timedOut, closed.status, closed.timedOut]).toEqual([0, true, 0, false]);
    expect([hits.get('/post-hang'), hits.get('/post-closed')]).toEqual([1, 1]);
  });
});
