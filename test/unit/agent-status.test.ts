import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StatusStore } from '../../agent/run/status.ts';

describe('Sync status', () => {
  it('keeps the last 10 runs newest first, survives a reopen, and moves lastTransitionTime only on a status change', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ks-status-')), 'status.json');
    const st = await StatusStore.open(file, 'app', 'git x branch main', false);
    expect(st.get('Ready')).toMatchObject({ status: 'Unknown', reason: 'Pending' });
    for (let i = 0; i < 12; i++) st.record({ revision: `r${i}`, trigger: 'interval', startedAt: new Date(i * 1000).toISOString(), duration: '1.00s', durationMs: 1000, result: 'Succeeded' });
    st.condition('Ready', 'True', 'ReconciliationSucceeded', 'a');
    const t = st.get('Ready')!.lastTransitionTime;
    await new Promise((r) => setTimeout(r, 5));
    st.condition('Ready', 'True', 'ReconciliationSucceeded', 'b');
    expect(st.get('Ready')).toMatchObject({ message: 'b', lastTransitionTime: t });
    st.condition('Stalled', 'False', 'x', '');
    st.condition('Reconciling', 'False', 'Idle', '');
    st.status.lastAppliedRevision = 'r11';
    await st.save();

    const again = await StatusStore.open(file, 'app', 'git x branch main', false);
    expect(again.status.history.map((h) => h.revision)).toEqual(['r11', 'r10', 'r9', 'r8', 'r7', 'r6', 'r5', 'r4', 'r3', 'r2']);
    expect(again.status.conditions.map((c) => c.type)).toEqual(['Ready', 'Reconciling', 'Stalled']);
    expect(again.status.lastAppliedRevision).toBe('r11');
    expect(again.get('Ready')!.status).toBe('True');
  });
});
