import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { newerVersion, unwrittenReason, writeFencedStatus } from '../../../agent/controller/resources/status-fence.ts';

/*
 * The status fence as a pure function: the leadership check before every attempt, the resourceVersion
 * the write carries, what a 409 and a 404 do. (test/integration/kubernetes/status-fence.test.ts runs it
 * against the real API server.) A fake object whose resourceVersion moves records every write.
 */
function object(version: number) {
  let rv = version;
  const writes: (string | undefined)[] = [];
  return {
    writes,
    bump: () => void rv++,
    apply: (sent: string | undefined): Promise<string | undefined> => {
      writes.push(sent);
      if (sent !== undefined && sent !== String(rv)) return Promise.reject(new ApiException(409, 'Conflict', '{}', {}));
      rv++;
      return Promise.resolve(String(rv));
    },
    read: (): Promise<string | undefined> => Promise.resolve(String(rv)),
  };
}

describe('writeFencedStatus', () => {
  it('writes nothing when this replica does not act: not one request', async () => {
    const o = object(5);
    let asked = 0;
    const acting = (): boolean => (asked++, false);
    expect(await writeFencedStatus({ resourceVersion: '5', acting, apply: o.apply, read: o.read })).toEqual({ written: false, why: 'not-acting' });
    expect(asked).toBe(1);
    expect(o.writes).toEqual([]);
  });

  it('writes with the resourceVersion it computed against, and answers the new one', async () => {
    const o = object(5);
    expect(await writeFencedStatus({ resourceVersion: '5', acting: () => true, apply: o.apply, read: o.read })).toEqual({ written: true, resourceVersion: '6' });
    expect(o.writes).toEqual(['5']);
  });

  it('after a 409 reads again and retries while it acts; stops as stale once it no longer acts', async () => {
    const moved = object(5);
    moved.bump();
    expect(await writeFencedStatus({ resourceVersion: '5', acting: () => true, apply: moved.apply, read: moved.read })).toEqual({ written: true, resourceVersion: '7' });
    expect(moved.writes).toEqual(['5', '6']);
    const demoted = object(5);
    demoted.bump();
    let turns = 0;
    expect(await writeFencedStatus({ resourceVersion: '5', acting: () => turns++ === 0, apply: demoted.apply, read: demoted.read })).toEqual({ written: false, why: 'stale' });
    expect(demoted.writes).toEqual(['5']);
    expect(unwrittenReason({ written: false, why: 'stale' })).toBe('changed by another writer and this replica does not act any more');
  });

  it('gives up after its attempts when the object keeps changing; a 404 means gone; other errors are thrown', async () => {
    const busy = object(5);
    const apply = (v: string | undefined): Promise<string | undefined> => (busy.bump(), busy.apply(v));
    expect(await writeFencedStatus({ resourceVersion: '5', acting: () => true, apply, read: busy.read, attempts: 2 })).toEqual({ written: false, why: 'changed-too-often' });
    expect(busy.writes).toHaveLength(2);
    const gone = (): Promise<string | undefined> => Promise.reject(new ApiException(404, 'Not Found', '{}', {}));
    expect(await writeFencedStatus({ resourceVersion: '5', acting: () => true, apply: gone, read: gone })).toEqual({ written: false, why: 'gone' });
    const broken = new ApiException(500, 'Internal', '{}', {});
    await expect(writeFencedStatus({ resourceVersion: '5', acting: () => true, apply: () => Promise.reject(broken), read: gone })).rejects.toBe(broken);
  });

  it('newerVersion keeps the larger etcd revision, else the one seen last', () => {
    expect(newerVersion('10', '9')).toBe('10');
    expect(newerVersion('9', '10')).toBe('10');
    expect(newerVersion('a', 'b')).toBe('b');
    expect(newerVersion('10', undefined)).toBe('10');
  });
});
