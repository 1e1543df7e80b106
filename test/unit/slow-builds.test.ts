import { describe, expect, it } from 'vitest';
import { slowBuilds } from '../testbed/faults/slow-builds.ts';

/** The slow-build simulation (test/testbed/faults/slow-builds.ts) shows only its servers as BUILD, and only for buildMs after their creation. */
describe('slowBuilds simulation', () => {
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const server = (name: string, created: string) => ({ id: name, name, status: 'ACTIVE', created, 'OS-EXT-STS:task_state': null });
  const at = (ms: number) => slowBuilds({ namePrefix: 'slow-', buildMs: 60_000, now: () => t0 + ms });

  it('a server of its prefix is BUILD (spawning) for buildMs after Nova created it, then ACTIVE as Nova says', () => {
    const list = { servers: [server('slow-1', '2026-01-01T00:00:00Z'), server('other', '2026-01-01T00:00:00Z')] };
    const early = at(59_000)({ service: 'compute', method: 'GET', path: '/v2.1/servers/detail', body: list }) as typeof list;
    expect(early.servers.map((s) => [s.name, s.status, s['OS-EXT-STS:task_state']])).toEqual([['slow-1', 'BUILD', 'spawning'], ['other', 'ACTIVE', null]]);
    const late = at(60_000)({ service: 'compute', method: 'GET', path: '/v2.1/servers/detail', body: list }) as typeof list;
    expect(late.servers.map((s) => s.status)).toEqual(['ACTIVE', 'ACTIVE']);
  });

  it('a single server answer too, and no other service or method', () => {
    const one = { server: server('slow-2', '2026-01-01T00:00:30Z') };
    expect((at(31_000)({ service: 'compute', method: 'GET', path: '/v2.1/servers/x', body: one }) as typeof one).server.status).toBe('BUILD');
    expect((at(31_000)({ service: 'network', method: 'GET', path: '/v2.0/x', body: one }) as typeof one).server.status).toBe('ACTIVE');
    expect((at(31_000)({ service: 'compute', method: 'POST', path: '/v2.1/servers', body: one }) as typeof one).server.status).toBe('ACTIVE');
  });
});
