import { describe, expect, it } from 'vitest';
import { describeWindow, windowAt } from '../../agent/cloud/window.ts';

describe('maintenance window', () => {
  const w = { schedule: '0 2 * * 6', duration: '4h', timeZone: 'Europe/Paris' };

  it('is open from the cron time in its time zone for its duration', () => {
    // Saturday 2026-11-28 02:00 in Paris (CET, UTC+1) is 01:00 UTC.
    expect(windowAt(w, new Date('2026-11-28T01:00:00Z'))).toEqual({ open: true, closesAt: new Date('2026-11-28T05:00:00Z') });
    expect(windowAt(w, new Date('2026-11-28T04:59:00Z')).open).toBe(true);
  });

  it('is closed outside and says when it opens next', () => {
    const closed = windowAt(w, new Date('2026-11-28T05:00:00Z'));
    expect(closed).toEqual({ open: false, opensAt: new Date('2026-12-05T01:00:00Z') });
    expect(windowAt(w, new Date('2026-11-28T00:59:00Z'))).toEqual({ open: false, opensAt: new Date('2026-11-28T01:00:00Z') });
    expect(describeWindow(closed)).toBe('outside the maintenance window; the next one opens at 2026-12-05T01:00:00.000Z');
  });

  it('is always open without a window', () => {
    expect(windowAt(undefined, new Date('2026-11-28T05:00:00Z'))).toEqual({ open: true });
  });
});
