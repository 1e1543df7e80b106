import type * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeSyncStatusStore } from '../../agent/controller/syncs/status-store.ts';
import { rejected, succeeded } from '../../agent/sync/conditions.ts';

/** The store's writes are not exercised here (the integration test reads them from the API server): only the mapping. */
const noApi = {} as k8s.CustomObjectsApi;

describe('the Sync resource status (KubeSyncStatusStore)', () => {
  it('maps the standalone status to the CRD fields: diagnostics for a rejected revision, history without run-local fields, the inventory', () => {
    const st = new KubeSyncStatusStore(noApi, () => true, 'infra', 'git x', false, undefined);
    expect(st.body().conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([['Ready', 'Unknown', 'Pending']]);
    st.record({ revision: 'main@sha1:a', trigger: 'webhook', startedAt: '2026-11-23T10:00:00.000Z', duration: '0.50s', durationMs: 500, result: 'Rejected', message: 'bad' });
    st.status.rejectedRevision = 'main@sha1:a';
    st.status.rejectedBecause = ['team-b/net.yaml:5:14: error [kubernetes.forbidden] Network/x at metadata.namespace: forbidden'];
    rejected(st, 'main@sha1:a', st.status.rejectedBecause);
    st.inventory = [{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: 'team-a', name: 'n1' }];
    const body = st.body();
    expect(body.history).toEqual([{ revision: 'main@sha1:a', startedAt: '2026-11-23T10:00:00.000Z', duration: '0.50s', result: 'Rejected', message: 'bad' }]);
    expect(body.diagnostics).toEqual(st.status.rejectedBecause);
    expect(body.rejectedRevision).toBe('main@sha1:a');
    expect(body.inventory).toEqual([{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: 'team-a', name: 'n1' }]);
    expect(body.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ValidationFailed' });

    // A later good revision clears the rejection: the fields are left out, so server-side apply removes them.
    st.status.rejectedRevision = undefined;
    st.status.rejectedBecause = undefined;
    succeeded(st, 'main@sha1:b', '1 applied');
    const after = st.body();
    expect('rejectedRevision' in after).toBe(false);
    expect('diagnostics' in after).toBe(false);
  });

  it('a demoted replica saves nothing: the status write happens only while acting says it leads (audit W1.3)', async () => {
    const sent: string[] = [];
    const api = { patchClusterCustomObjectStatus: (req: { name: string }) => Promise.resolve(void sent.push(req.name)) } as unknown as k8s.CustomObjectsApi;
    let leading = true;
    const st = new KubeSyncStatusStore(api, () => leading, 'infra', 'git x', false, undefined);
    await st.save();
    expect(sent).toEqual(['infra']);
    leading = false;
    succeeded(st, 'main@sha1:b', '1 applied');
    await st.save();
    expect(sent).toEqual(['infra']);
  });

  it('reloads what the previous leader stored (a new leader prunes from the stored inventory), dates as strings', () => {
    const st = new KubeSyncStatusStore(noApi, () => true, 'infra', 'git x', false, undefined);
    st.reload({
      lastAppliedRevision: 'main@sha1:c',
      inventory: [{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: 'a', name: 'n2' }],
      conditions: [{ type: 'Ready', status: 'True', reason: 'ReconciliationSucceeded', message: 'ok', lastTransitionTime: new Date('2026-11-23T11:00:00Z') as unknown as string }],
      history: [{ revision: 'main@sha1:c', startedAt: new Date('2026-11-23T11:00:00Z') as unknown as string, result: 'Succeeded' }],
    });
    expect(st.status.lastAppliedRevision).toBe('main@sha1:c');
    expect(st.inventory.map((e) => e.name)).toEqual(['n2']);
    expect(st.get('Ready')?.lastTransitionTime).toBe('2026-11-23T11:00:00.000Z');
    expect(st.body().history).toEqual([{ revision: 'main@sha1:c', startedAt: '2026-11-23T11:00:00.000Z', duration: '0s', result: 'Succeeded' }]);
  });
});
