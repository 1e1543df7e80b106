import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../agent/events/events.ts';
import { runEventSinks } from '../../agent/telemetry/event-sinks.ts';
import { createLogger } from '../../agent/telemetry/logger.ts';
import { AgentMetrics } from '../../agent/telemetry/metrics.ts';

describe("the runner's engine-event subscribers", () => {
  it('log one structured line and count one series per event, from the typed fields', async () => {
    const lines: string[] = [];
    const out = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
    const metrics = new AgentMetrics();
    const sink = runEventSinks('app', createLogger('info', 'json', out), metrics);
    const at = new Date(0).toISOString();
    const created: EngineEvent = { type: 'created', address: 'team/Network/net-a', kind: 'Network', reason: 'Created', message: 'created network net-a', id: 'n1', severity: 'normal', revision: 'main@sha1:abc', at };
    sink(created);
    sink({ ...created, address: 'team/Network/net-b', id: 'n2' });
    sink({ type: 'failed', address: 'team/Port/p', kind: 'Port', reason: 'Conflict', message: 'port p: the address is in use', severity: 'warning', at });
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged[0]).toMatchObject({ level: 30, msg: 'created network net-a', event: 'created', address: 'team/Network/net-a', id: 'n1', revision: 'main@sha1:abc' });
    expect(logged[2]).toMatchObject({ level: 40, event: 'failed', reason: 'Conflict' });
    const text = await metrics.registry.metrics();
    expect(text).toContain('kupenstack_engine_events_total{sync="app",type="created",kind="Network"} 2');
    expect(text).toContain('kupenstack_engine_events_total{sync="app",type="failed",kind="Port"} 1');
  });
});
