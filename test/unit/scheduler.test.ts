import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { nextDelay, Scheduler, type Trigger } from '../../agent/sync/scheduler.ts';

const o = { intervalMs: 60_000, retryIntervalMs: 5_000, jitter: 0.1 };

describe('nextDelay', () => {
  it('is the interval ± 10 % after a success', () => {
    expect(nextDelay(true, 0, o, () => 0)).toBe(54_000);
    expect(nextDelay(true, 0, o, () => 0.5)).toBe(60_000);
    expect(nextDelay(true, 0, o, () => 1)).toBe(66_000);
  });

  it('backs off exponentially from retryInterval after failures, capped at the interval', () => {
    const mid = (): number => 0.5;
    expect([1, 2, 3, 4, 5, 6].map((n) => nextDelay(false, n, o, mid))).toEqual([5_000, 10_000, 20_000, 40_000, 60_000, 60_000]);
    expect(nextDelay(false, 40, o, mid)).toBe(60_000);
    // A retry interval longer than the interval is its own cap.
    expect(nextDelay(false, 3, { intervalMs: 1000, retryIntervalMs: 5000 }, mid)).toBe(5000);
  });
});

describe('Scheduler', () => {
  it('never runs twice at once: triggers during a run coalesce into one more run', async () => {
    const runs: Trigger[] = [];
    let active = 0;
    let maxActive = 0;
    const s = new Scheduler({ intervalMs: 3_600_000, retryIntervalMs: 3_600_000, timeoutMs: 10_000, suspend: false }, async (t) => {
      runs.push(t);
      active++;
      maxActive = Math.max(maxActive, active);
      await sleep(50);
      active--;
      return true;
    });
    s.start();
    s.trigger('webhook');
    s.trigger('webhook');
    s.trigger('schedule');
    await sleep(250);
    expect(maxActive).toBe(1);
    expect(runs).toEqual(['startup', 'webhook']);
    await s.stop(1000);
  });

  it('registry notifications leave the interval alone: the full pass comes when it was due, and a full trigger replaces a queued registry one', async () => {
    const runs: { t: Trigger; at: number }[] = [];
    const start = Date.now();
    const s = new Scheduler({ intervalMs: 300, retryIntervalMs: 300, timeoutMs: 10_000, suspend: false, jitter: 0 }, async (t) => {
      runs.push({ t, at: Date.now() - start });
      await sleep(20);
      return true;
    });
    s.start();
    await sleep(100);
    s.trigger('registry');
    await sleep(100);
    s.trigger('registry');
    await sleep(170);
    await s.stop(100);
    const kinds = runs.map((r) => r.t);
    expect(kinds.slice(0, 4)).toEqual(['startup', 'registry', 'registry', 'interval']);
    // The interval run is 300 ms after the startup run ended, not after the last registry run.
    const interval = runs[3]!;
    expect(interval.at).toBeGreaterThanOrEqual(310);
    expect(interval.at).toBeLessThan(450);

    const queued: Trigger[] = [];
    const q = new Scheduler({ intervalMs: 3_600_000, retryIntervalMs: 3_600_000, timeoutMs: 10_000, suspend: false }, async (t) => {
      queued.push(t);
      await sleep(50);
      return true;
    });
    q.start();
    q.trigger('registry');
    q.trigger('webhook');
    q.trigger('registry');
    await sleep(200);
    await q.stop(100);
    expect(queued).toEqual(['startup', 'webhook']);
  });

  it('retries failures sooner than the interval, then goes back to the interval', async () => {
    const runs: { t: Trigger; at: number }[] = [];
    const start = Date.now();
    let n = 0;
    const s = new Scheduler({ intervalMs: 400, retryIntervalMs: 50, timeoutMs: 10_000, suspend: false, jitter: 0 }, (t) => {
      runs.push({ t, at: Date.now() - start });
      return Promise.resolve(++n > 2);
    });
    s.start();
    await sleep(700);
    await s.stop(100);
    // startup (fails) → retry after 50 ms (fails) → retry after 100 ms (succeeds) → interval 400 ms.
    expect(runs.map((r) => r.t).slice(0, 4)).toEqual(['startup', 'retry', 'retry', 'interval']);
    expect(runs[3]!.at - runs[2]!.at).toBeGreaterThanOrEqual(390);
    expect(runs[2]!.at - runs[1]!.at).toBeGreaterThanOrEqual(95);
    expect(runs[2]!.at - runs[1]!.at).toBeLessThan(390);
  });

  it('aborts a run past its timeout through the signal', async () => {
    let reason: unknown;
    const s = new Scheduler({ intervalMs: 3_600_000, retryIntervalMs: 3_600_000, timeoutMs: 50, suspend: false }, async (_t, signal) => {
      await sleep(5_000, undefined, { signal }).catch(() => {});
      reason = signal.reason;
      return false;
    });
    s.start();
    await sleep(300);
    expect(reason).toBeInstanceOf(DOMException);
    expect((reason as DOMException).name).toBe('TimeoutError');
    await s.stop(10);
  });

  it('does nothing while suspended', async () => {
    let runs = 0;
    const s = new Scheduler({ intervalMs: 10, retryIntervalMs: 10, timeoutMs: 1000, suspend: true }, () => {
      runs++;
      return Promise.resolve(true);
    });
    s.start();
    expect(s.trigger('webhook')).toBe(false);
    await sleep(100);
    expect(runs).toBe(0);
  });

  it('on stop lets the current run finish within the grace period, and aborts it after', async () => {
    let finished = false;
    const s1 = new Scheduler({ intervalMs: 3_600_000, retryIntervalMs: 3_600_000, timeoutMs: 10_000, suspend: false }, async () => {
      await sleep(100);
      finished = true;
      return true;
    });
    s1.start();
    await s1.stop(2000);
    expect(finished).toBe(true);

    let aborted = false;
    const s2 = new Scheduler({ intervalMs: 3_600_000, retryIntervalMs: 3_600_000, timeoutMs: 10_000, suspend: false }, async (_t, signal) => {
      await sleep(5000, undefined, { signal }).catch(() => (aborted = true));
      return false;
    });
    s2.start();
    const t0 = Date.now();
    await s2.stop(100);
    expect(aborted).toBe(true);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(s2.trigger('webhook')).toBe(false);
  });

  it('runs on a cron schedule', async () => {
    const runs: Trigger[] = [];
    const s = new Scheduler({ intervalMs: 3_600_000, retryIntervalMs: 3_600_000, timeoutMs: 10_000, suspend: false, schedule: '* * * * * *' }, (t) => {
      runs.push(t);
      return Promise.resolve(true);
    });
    s.start();
    await sleep(2300);
    await s.stop(100);
    expect(runs[0]).toBe('startup');
    expect(runs.filter((t) => t === 'schedule').length).toBeGreaterThanOrEqual(1);
  });
});
