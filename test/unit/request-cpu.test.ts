import { describe, expect, it } from 'vitest';
import { attribute, parseAccessLine, perCallKind, requestIdsIn } from '../../test/bench/request-cpu.ts';

const line =
  '2026-11-27 23:49:50.201 31742 INFO neutron.wsgi [None req-27e6cf73-6e79-4cf5-8064-4855b33f087e f03e38e0f600411dbcae3352e5243953 506ce22f11194cabaa84c2a72a74b4b5 - - default default] ' +
  '127.0.0.1 "GET /v2.0/networks/be87c8d2-9259-462d-ba5f-f68fc05e8f88?fields=id HTTP/1.1" status: 200  len: 796 time: 1.1769812\u001b[00m';

describe('the bench profile: OpenStack CPU per request (test/bench/request-cpu.ts)', () => {
  it('reads an eventlet access line: its id, worker, call kind and when it ran', () => {
    const r = parseAccessLine(line, 'neutron-server')!;
    const end = new Date(2026, 10, 27, 23, 49, 50, 201).getTime();
    expect(r).toEqual({ id: 'req-27e6cf73-6e79-4cf5-8064-4855b33f087e', pid: 31742, service: 'neutron-server', method: 'GET', path: '/v2.0/networks/ID', start: end - 1176.9812, end });
    expect(parseAccessLine('2026-11-27 23:38:09.535 31207 WARNING oslo_messaging.rpc.client [None req-1 - - - - - -] Using RPCClient', 'neutron-server')).toBeUndefined();
  });

  it("shares a worker's CPU among its requests in flight by overlap, and keeps what no request was in flight for apart", () => {
    const req = (id: string, pid: number, start: number, end: number) => ({ id, pid, service: 'neutron-server', method: 'POST', path: '/v2.0/ports', start, end });
    // Worker 1: a alone for the first second, b beside it for the last half second; worker 2: nothing logged.
    const requests = [req('a', 1, 0, 2000), req('b', 1, 1500, 2000)];
    const samples = [
      { at: 0, ticks: { '1': 0, '2': 0 } },
      { at: 1000, ticks: { '1': 60, '2': 10 } },
      { at: 2000, ticks: { '1': 100, '2': 10 } },
    ];
    const { cpu, idle } = attribute(samples, requests, 100);
    // The second interval's 0.4 s: a was in flight all of it, b half of it.
    expect(cpu.get('a')).toBeCloseTo(0.6 + (0.4 * 2) / 3);
    expect(cpu.get('b')).toBeCloseTo(0.4 / 3);
    expect([...idle]).toEqual([['other', 0.1]]);
    expect([...perCallKind(requests, cpu, new Set(['b']))]).toEqual([['neutron-server POST /v2.0/ports', { n: 1, cpu: cpu.get('b') }]]);
  });

  it('finds the request ids a client log names', () => {
    expect([...requestIdsIn('X-Openstack-Request-Id: req-27e6cf73-6e79-4cf5-8064-4855b33f087e\nnothing req-1')]).toEqual(['req-27e6cf73-6e79-4cf5-8064-4855b33f087e']);
  });
});
