import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { allFaults, OpenStackFaultProxy, type FaultKind } from '../testbed/faults/openstack-proxy.ts';

/**
 * The fault proxy itself (test/testbed/faults): every fault does what its
 * name says, the ones after the service recorded what was lost, and JSON
 * answers point back through the proxy. Its upstream here is a loopback
 * server that counts the requests it really got.
 */
let upstream: Server;
let port = 0;
let received = 0;
const bodies: string[] = [];
beforeAll(async () => {
  upstream = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => bodies.push(text));
    received++;
    const body = JSON.stringify({ network: { id: `id-${received}`, name: 'net-1', links: [{ href: `http://127.0.0.1:${port}/v2.0/networks/x` }] } });
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  port = (upstream.address() as AddressInfo).port;
});
afterAll(() => {
  upstream.closeAllConnections();
  upstream.close();
});

async function through(fault: FaultKind | undefined, method = 'POST'): Promise<{ proxy: OpenStackFaultProxy; outcome: { status: number; text: string } | { error: string }; reached: number }> {
  const proxy = await new OpenStackFaultProxy({ seed: 7, rate: fault ? 1 : 0, faults: fault ? [fault] : allFaults, slowMs: 1_500 }, [{ service: 'network', port }]).start();
  const before = received;
  const url = `${proxy.origin('network')}/v2.0/networks`;
  let outcome: { status: number; text: string } | { error: string };
  try {
    const res = await fetch(url, { method, signal: AbortSignal.timeout(1_000), ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) });
    outcome = { status: res.status, text: await res.text() };
  } catch (err) {
    outcome = { error: err instanceof Error ? err.name : String(err) };
  }
  await proxy.stop();
  return { proxy, outcome, reached: received - before };
}

describe('the OpenStack fault proxy', () => {
  it('passes requests through and rewrites every upstream URL in JSON answers to its own', async () => {
    const { proxy, outcome, reached } = await through(undefined, 'GET');
    expect(reached).toBe(1);
    expect(outcome).toMatchObject({ status: 200 });
    const text = (outcome as { text: string }).text;
    expect(text).toContain(`${proxy.origin('network')}/v2.0/networks/x`);
    expect(text).not.toContain(`:${port}/`);
  });

  it.each([
    ['status-500', 500],
    ['status-502', 502],
    ['status-503', 503],
    ['status-409', 409],
    ['status-429', 429],
  ] as const)('%s answers %i without reaching the service', async (fault, status) => {
    const { outcome, reached, proxy } = await through(fault);
    expect(outcome).toMatchObject({ status });
    expect(reached).toBe(0);
    expect(proxy.lost).toEqual([]);
  });

  it('reset-before: the connection breaks and the service never saw the request', async () => {
    const { outcome, reached, proxy } = await through('reset-before');
    expect(outcome).toHaveProperty('error');
    expect(reached).toBe(0);
    expect(proxy.lost).toEqual([]);
  });

  it.each(['reset-after', 'slow', 'truncate'] as const)('%s: the service created it, the client did not get the answer, the proxy recorded the create', async (fault) => {
    const { outcome, reached, proxy } = await through(fault);
    expect(reached).toBe(1);
    if ('status' in outcome) expect(() => JSON.parse(outcome.text) as unknown).toThrow();
    else expect(outcome.error).toMatch(/TypeError|TimeoutError|AbortError/);
    expect(proxy.lost).toEqual([{ fault, service: 'network', method: 'POST', path: '/v2.0/networks', status: 201, id: expect.stringMatching(/^id-/) as unknown, name: 'net-1' }]);
  });

  it('first: the first matching request of a faulty round gets the placed fault whatever the seed, once; a round with rate 0 places nothing', async () => {
    // rate 1e-9: a faulty round whose seeded faults never land, so only the placed one can.
    const proxy = await new OpenStackFaultProxy({ seed: 7, rate: 0, slowMs: 1_500, first: { method: 'POST', paths: /\/networks$/, fault: 'reset-after' } }, [{ service: 'network', port }]).start();
    const url = `${proxy.origin('network')}/v2.0/networks`;
    const post = (): Promise<string> => fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(1_000) }).then((r) => String(r.status), (err: unknown) => (err instanceof Error ? err.name : String(err)));
    const before = received;
    const atRateZero = await post();
    proxy.reseed(8, 1e-9);
    const got = [await fetch(url, { signal: AbortSignal.timeout(1_000) }).then((r) => String(r.status)), await post(), await post()];
    await proxy.stop();
    expect(atRateZero).toBe('201');
    // The GET does not match; the first POST loses its answer after the service made it; the next passes.
    expect(got).toEqual(['200', 'TypeError', '201']);
    expect(received - before).toBe(4);
    expect(proxy.lost).toEqual([{ fault: 'reset-after', service: 'network', method: 'POST', path: '/v2.0/networks', status: 201, id: expect.stringMatching(/^id-/) as unknown, name: 'net-1' }]);
    expect(Object.fromEntries(proxy.injected)).toEqual({ 'reset-after': 1 });
  });

  it('hold: the matching request waits whole until released, and reaches the service although its client was killed meanwhile', async () => {
    const proxy = await new OpenStackFaultProxy({ seed: 7, rate: 0, slowMs: 1_500 }, [{ service: 'network', port }]).start();
    const held = proxy.hold('POST', /\/networks$/);
    const url = `${proxy.origin('network')}/v2.0/networks`;
    const before = received;
    const client = new AbortController();
    const sent = fetch(url, { method: 'POST', body: '{"networks":[{"name":"a"},{"name":"b"}]}', headers: { 'content-type': 'application/json' }, signal: client.signal }).then((r) => String(r.status), (err: unknown) => (err instanceof Error ? err.name : String(err)));
    expect(await held.arrived).toEqual({ method: 'POST', path: '/v2.0/networks', body: '{"networks":[{"name":"a"},{"name":"b"}]}' });
    // Another request passes while one is held; the service has not seen the held one.
    expect(await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }).then((r) => r.status)).toBe(201);
    expect(received - before).toBe(1);
    client.abort(); // the client dies with its create in flight
    expect(await sent).toBe('AbortError');
    held.release();
    expect(await held.answered).toBe(201);
    await proxy.stop();
    expect(received - before).toBe(2);
    expect(bodies.at(-1)).toBe('{"networks":[{"name":"a"},{"name":"b"}]}');
    expect(proxy.lost).toEqual([expect.objectContaining({ fault: 'reset-after', method: 'POST', path: '/v2.0/networks', status: 201 })]);
  });

  it('requests: a deferred request is answered at once and reaches the service, whole, only later (or at stop); the others pass at once', async () => {
    const seen: string[] = [];
    const requests = { paths: /\/networks\/[^/]+$/, seen: (r: { method: string; path: string; body: string }) => (seen.push(`${r.method} ${r.path} ${r.body}`), r.method === 'DELETE' ? { deferMs: 300, status: 204 } : undefined) };
    const proxy = await new OpenStackFaultProxy({ seed: 7, rate: 0, slowMs: 1_500, requests }, [{ service: 'network', port }]).start();
    const before = received;
    const url = `${proxy.origin('network')}/v2.0/networks`;
    expect(await fetch(`${url}/n1`, { method: 'DELETE' }).then((r) => r.status)).toBe(204);
    expect(received - before, 'the DELETE has not reached the service yet').toBe(0);
    expect(await fetch(`${url}/n2`, { method: 'PUT', body: '{"network":{}}', headers: { 'content-type': 'application/json' } }).then((r) => r.status)).toBe(200);
    expect(received - before).toBe(1);
    expect(bodies.at(-1)).toBe('{"network":{}}');
    await vi.waitFor(() => expect(received - before, 'the deferred DELETE reached the service').toBe(2), { timeout: 10_000, interval: 50 });
    expect(await fetch(`${url}/n3`, { method: 'DELETE' }).then((r) => r.status)).toBe(204);
    await proxy.stop();
    expect(received - before, 'stop() sent what was still deferred').toBe(3);
    expect(seen).toEqual(['DELETE /v2.0/networks/n1 ', 'PUT /v2.0/networks/n2 {"network":{}}', 'DELETE /v2.0/networks/n3 ']);
  });
});
