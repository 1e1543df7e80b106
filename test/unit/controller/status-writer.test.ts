import { describe, expect, it } from 'vitest';
import { sameStatus, statusBody } from '../../../agent/controller/resources/status-writer.ts';

const vmFields = new Set(['observedGeneration', 'conditions', 'id', 'observed', 'lastSyncTime', 'serverStatus', 'powerState', 'imageID', 'addresses', 'heal']);
const ready = { type: 'Ready' as const, status: 'True' as const, reason: 'Reconciled', message: 'ok', lastTransitionTime: '2026-11-23T12:00:00.000Z' };

describe('status of a custom resource', () => {
  it('carries observedGeneration, conditions, id, and spreads observations over the fields the CRD declares', () => {
    const body = statusBody(
      { id: 'srv-1', conditions: [ready], lastSyncTime: '2026-11-23T12:00:01.000Z', observed: { serverStatus: 'ACTIVE', powerState: 'Running', addresses: [{ address: '10.0.0.5', type: 'fixed' }], hypervisor: 'kwok' } },
      3,
      vmFields,
    );
    expect(body).toEqual({
      observedGeneration: 3,
      conditions: [{ ...ready, observedGeneration: 3 }],
      id: 'srv-1',
      lastSyncTime: '2026-11-23T12:00:01.000Z',
      serverStatus: 'ACTIVE',
      powerState: 'Running',
      addresses: [{ address: '10.0.0.5', type: 'fixed' }],
      observed: { hypervisor: 'kwok' },
    });
  });

  it('shows heal attempts where the kind has them', () => {
    const body = statusBody({ heal: [{ step: 'reboot', at: '2026-11-23T12:00:00Z', reason: 'ERROR', result: 'failed', error: 'x' }], healHistory: [{ step: 'reboot', at: '2026-11-23T12:00:00Z', reason: 'ERROR', result: 'failed', error: 'x' }] }, 1, vmFields);
    expect(body.heal).toEqual({ attempts: 1, gaveUp: false, history: [{ time: '2026-11-23T12:00:00Z', step: 'reboot', reason: 'ERROR', result: 'Failed', message: 'x' }] });
    expect(statusBody({ healHistory: [{ step: 'reboot', at: 't', reason: 'r', result: 'done' }] }, 1, new Set(['id'])).heal).toBeUndefined();
  });

  it('is not written again when only times differ or keys come back sorted', () => {
    const mine = statusBody({ id: 'n1', conditions: [ready], lastSyncTime: 'later' }, 1, vmFields);
    const server = { lastSyncTime: 'earlier', id: 'n1', observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled', message: 'ok', lastTransitionTime: new Date(0), observedGeneration: 1 }] };
    expect(sameStatus(server, mine)).toBe(true);
    expect(sameStatus({ ...server, id: 'n2' }, mine)).toBe(false);
    expect(sameStatus(undefined, mine)).toBe(false);
  });
});
