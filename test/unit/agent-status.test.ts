import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StatusStore, type SyncStatusStore } from '../../agent/sync/status.ts';
import { fetched, fetchFailed, sourceReasons } from '../../agent/sync/conditions.ts';

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

  it('keeps the fetch side apart: SourceReady names the fetched revision or why fetching failed, after the three kstatus conditions', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ks-status-')), 'status.json');
    const st: SyncStatusStore = await StatusStore.open(file, 'app', 'git x branch main', false);
    fetched(st, 'main@sha1:abc');
    expect(st.status.lastFetchedRevision).toBe('main@sha1:abc');
    st.status.lastAppliedRevision = 'main@sha1:abc';
    fetchFailed(st, sourceReasons.auth.reason, sourceReasons.auth.stalled, 'git x: authentication failed');
    expect(st.get('SourceReady')).toMatchObject({ status: 'False', reason: 'AuthenticationFailed' });
    expect(st.get('Ready')).toMatchObject({ status: 'False', message: 'git x: authentication failed. The last applied revision main@sha1:abc stays applied.' });
    expect(st.get('Stalled')).toMatchObject({ status: 'True', reason: 'AuthenticationFailed' });
    st.condition('Reconciling', 'False', 'Idle', '');
    expect(st.status.conditions.map((c) => c.type)).toEqual(['Ready', 'Reconciling', 'Stalled', 'SourceReady']);
  });
});
