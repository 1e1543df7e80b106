import { describe, expect, it } from 'vitest';
import { pausedBy, pendingWork, reportPaused } from '../../../agent/controller/resources/paused.ts';
import type { EngineEvent } from '../../../agent/events/events.ts';
import type { Plan } from '../../../agent/plan/plan.ts';
import type { ResourceStatus, StoredState } from '../../../agent/status/store.ts';

const plan = (p: Partial<Plan>): Plan => ({ revision: 'k8s@7', against: 'live', summary: { create: 0, update: 0, replace: 0, delete: 0, destructive: 0 }, changes: [], drift: [], held: [], images: [], warnings: [], ...p });
const change = (address: string, action: Plan['changes'][number]['action'], fields: { path: string; before: unknown; after: unknown }[] = []): Plan['changes'][number] => {
  const [namespace = '', kind = '', name = ''] = address.split('/');
  return { address, kind, namespace, name, action, fields: fields.map((f) => ({ ...f, forcesReplacement: false })), destructive: false, reasons: [] };
};

describe('a paused namespace (kupenstack.io/paused)', () => {
  it('is paused by the annotation, whatever its value; its value is the reason', () => {
    expect(pausedBy(undefined)).toBeUndefined();
    expect(pausedBy({ 'kupenstack.io/pause-upgrade-at': 'nova' })).toBeUndefined();
    expect(pausedBy({ 'kupenstack.io/paused': 'incident 4711' })).toBe('incident 4711');
    expect(pausedBy({ 'kupenstack.io/paused': ' ' })).toBe('no reason given');
  });

  it('names per object what a run would do: field drift, creates, deletes, immutable drift; nothing for no-ops', () => {
    const work = pendingWork(
      plan({
        changes: [change('a/Network/app', 'update', [{ path: 'mtu', before: 1300, after: 1400 }]), change('a/Subnet/s', 'noop'), change('a/Router/r', 'create'), change('a/Port/p', 'delete')],
        drift: [{ address: 'a/Subnet/s', path: 'cidr', expected: '10.0.0.0/24', actual: '10.1.0.0/24', immutable: true }],
      }),
    );
    expect(Object.fromEntries(work)).toEqual({
      'a/Network/app': 'would update mtu 1300 → 1400',
      'a/Router/r': 'would create',
      'a/Port/p': 'would delete',
      'a/Subnet/s': 'cidr is "10.1.0.0/24" in OpenStack, "10.0.0.0/24" declared (immutable)',
    });
  });

  it('writes Paused on every object, Ready False and a Warning Event only where OpenStack differs, keeping the rest of the status', async () => {
    const written = new Map<string, ResourceStatus>();
    const events: EngineEvent[] = [];
    const store = { load: (): Promise<StoredState> => Promise.resolve({ owner: 'a', resources: {}, history: [] }), putResource: (a: string, s: ResourceStatus | undefined) => Promise.resolve(void written.set(a, s!)), finishRun: () => Promise.resolve() };
    const ready = { type: 'Ready' as const, status: 'True' as const, reason: 'Succeeded', message: 'ok', lastTransitionTime: '2026-01-01T00:00:00.000Z' };
    const n = await reportPaused({
      ns: 'a',
      why: 'incident 4711',
      addresses: ['a/Network/app', 'a/Subnet/s'],
      plan: plan({ changes: [change('a/Network/app', 'update', [{ path: 'mtu', before: 1300, after: 1400 }])] }),
      store,
      events: (e) => events.push(e),
      kindOf: (a) => a.split('/')[1],
      current: () => ({ id: 'x1', conditions: [ready] }),
      now: new Date('2026-02-02T00:00:00.000Z'),
    });
    expect(n).toBe(1);
    const net = written.get('a/Network/app')!;
    expect(net.id).toBe('x1');
    expect(net.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Paused', message: 'namespace a is paused (kupenstack.io/paused: incident 4711): drift not corrected: would update mtu 1300 → 1400' });
    expect(written.get('a/Subnet/s')!.conditions?.find((c) => c.type === 'Ready')).toEqual(ready);
    for (const s of written.values()) expect(s.conditions?.find((c) => c.type === 'Reconciling')).toMatchObject({ status: 'False', reason: 'Paused' });
    expect(events).toEqual([expect.objectContaining({ type: 'drift-detected', address: 'a/Network/app', kind: 'Network', reason: 'DriftNotCorrected', severity: 'warning' })]);
  });
});
