import { describe, expect, it } from 'vitest';
import { objectHealth, summarize } from '../../agent/controller/syncs/health.ts';

const cond = (type: string, status: string, reason = 'R', message = ''): { type: string; status: string; reason: string; message: string } => ({ type, status, reason, message });

describe('wait: the applied objects counted by their own conditions', () => {
  it('Ready only for the current generation; Stalled wins; missing or status-less objects are Reconciling', () => {
    expect(objectHealth({ metadata: { generation: 2 }, status: { observedGeneration: 2, conditions: [cond('Ready', 'True')] } }).state).toBe('ready');
    expect(objectHealth({ metadata: { generation: 3 }, status: { observedGeneration: 2, conditions: [cond('Ready', 'True')] } }).state).toBe('reconciling');
    expect(objectHealth({ status: { conditions: [cond('Ready', 'False'), cond('Stalled', 'True', 'HealFailed', 'server is in ERROR')] } })).toEqual({ state: 'stalled', reason: 'HealFailed', message: 'server is in ERROR' });
    expect(objectHealth({}).state).toBe('reconciling');
    expect(objectHealth(undefined)).toMatchObject({ state: 'reconciling', reason: 'NotFound' });
  });

  it('counts, and names the Stalled objects before those still reconciling', () => {
    const h = summarize([
      { name: 'Network/a/net', observed: { status: { conditions: [cond('Ready', 'True')] } } },
      { name: 'Subnet/a/sub', observed: { status: { conditions: [cond('Ready', 'False', 'Progressing', 'creating')] } } },
      { name: 'VirtualMachine/a/web', observed: { status: { conditions: [cond('Stalled', 'True', 'Failed', 'server is in ERROR')] } } },
    ]);
    expect(h).toEqual({ ready: 1, reconciling: 1, stalled: 1, failing: ['VirtualMachine/a/web: Failed: server is in ERROR', 'Subnet/a/sub: Progressing: creating'] });
  });
});
