import { describe, expect, it } from 'vitest';
import { difference } from '../../agent/plan/diff.ts';
import { serverHealth, type NovaServer } from '../../agent/kinds/kit/nova-server.ts';
import { toRemote } from '../../agent/kinds/virtualmachine/remote.ts';
import { virtualMachine } from '../../agent/kinds/virtualmachine/adapter.ts';

/*
 * What a requeued run sees of a server another run acted on (progress by
 * requeue, issue 27): a server being deleted is on its way out, not a failure
 * to heal again; a resize waiting in VERIFY_RESIZE is confirmed by the update
 * (its flavor shows unconfirmed, so it differs from the declared one).
 */
const now = Date.parse('2026-01-01T00:10:00Z');
const flavor = { original_name: 'small', vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0 };
const server = (over: Partial<NovaServer>): NovaServer => ({ id: 's1', name: 'vm', status: 'ACTIVE', updated: '2026-01-01T00:09:00Z', flavor, 'OS-EXT-STS:power_state': 1, ...over });

describe('a server another run acted on', () => {
  it('deleting (even from ERROR) is progressing, not failed', () => {
    expect(serverHealth(server({ status: 'ERROR', 'OS-EXT-STS:task_state': 'deleting' }), now)).toEqual({ state: 'progressing', reason: 'ERROR (deleting)' });
    expect(serverHealth(server({ 'OS-EXT-STS:task_state': 'deleting' }), now).state).toBe('progressing');
    expect(serverHealth(server({ status: 'ERROR' }), now).state).toBe('failed');
  });

  it('a resize waiting for its confirmation waits for the update, which the flavor asks for; an old one is a failure to heal', () => {
    const verify = server({ status: 'VERIFY_RESIZE' });
    expect(serverHealth(verify, now)).toEqual({ state: 'progressing', reason: 'VERIFY_RESIZE: the resize waits for its confirmation', waitsForUpdate: true });
    expect(serverHealth(server({ status: 'VERIFY_RESIZE', updated: '2025-12-31T23:50:00Z' }), now).state).toBe('failed');
    const desired = { flavor: { name: 'small', vcpus: 1, ram: 512, disk: 1, ephemeral: 0, swap: 0 } };
    expect(Object.keys(difference(virtualMachine, desired, toRemote(verify, [])).updates)).toEqual(['flavor']);
    expect(difference(virtualMachine, desired, toRemote(server({}), [])).updates).toEqual({});
  });
});
