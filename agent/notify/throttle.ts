/**
 * Dedup and rate limit, per target: the same event for the same Sync and
 * revision within `windowMs` goes out once (a rejected revision is retried
 * with backoff and would otherwise page someone at every retry), and at most
 * `perMinute` notices leave for one target in any minute (a flapping Sync
 * cannot flood a channel). Time is passed in, so tests need no clock.
 */
export interface ThrottleOptions {
  windowMs: number;
  perMinute: number;
}

const defaultThrottle: ThrottleOptions = { windowMs: 10 * 60_000, perMinute: 20 };

export type Verdict = 'send' | 'duplicate' | 'rate-limited';

export class Throttle {
  private readonly o: ThrottleOptions;
  private readonly seen = new Map<string, number>();
  private sent: number[] = [];

  constructor(o: ThrottleOptions = defaultThrottle) {
    this.o = o;
  }

  judge(key: string, now: number): Verdict {
    for (const [k, at] of this.seen) if (now - at >= this.o.windowMs) this.seen.delete(k);
    if (this.seen.has(key)) return 'duplicate';
    this.sent = this.sent.filter((at) => now - at < 60_000);
    if (this.sent.length >= this.o.perMinute) return 'rate-limited';
    this.seen.set(key, now);
    this.sent.push(now);
    return 'send';
  }
}
