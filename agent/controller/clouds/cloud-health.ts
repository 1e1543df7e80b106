import type { DownReason } from '../../kinds/openstackcloudconnection/index.ts';

/** What the last probe of a connection's cloud found. */
export type CloudState = { kind: 'unknown' } | { kind: 'up' } | { kind: 'down'; reason: DownReason; message: string; since: number };

export interface CloudHealthTimings {
  /** A cloud that answers is asked again this often (a Keystone that stops answering is noticed within it). */
  upEveryMs: number;
  /** First probe after a failure; doubles per failure in a row, up to downMaxMs (a cloud back is noticed within downMaxMs). */
  downBaseMs: number;
  downMaxMs: number;
}

export const defaultHealthTimings: CloudHealthTimings = { upEveryMs: 10_000, downBaseMs: 1_000, downMaxMs: 30_000 };

/**
 * One cloud's health as its probes found it, and when to probe next: the circuit breaker that keeps a
 * cloud that is down from taking workers (its namespaces fail at once, no call made) while the others
 * go on. Per connection: one cloud's failures never delay another's probes.
 */
export class CloudHealth {
  private current: CloudState = { kind: 'unknown' };
  private failures = 0;
  private readonly timings: CloudHealthTimings;

  constructor(timings: CloudHealthTimings = defaultHealthTimings) {
    this.timings = timings;
  }

  get state(): CloudState {
    return this.current;
  }

  /** Records a probe; answers whether the cloud's state changed (up ↔ down, or a down cloud's reason). */
  record(result: { up: true } | { up: false; reason: DownReason; message: string }, now = Date.now()): boolean {
    const was = this.current;
    if (result.up) {
      this.failures = 0;
      this.current = { kind: 'up' };
      return was.kind !== 'up';
    }
    this.failures++;
    const since = was.kind === 'down' ? was.since : now;
    this.current = { kind: 'down', reason: result.reason, message: result.message, since };
    return was.kind !== 'down' || was.reason !== result.reason || was.message !== result.message;
  }

  /** Starts afresh (the connection's spec changed): unknown until the next probe. */
  reset(): void {
    this.current = { kind: 'unknown' };
    this.failures = 0;
  }

  /** When to probe again: the up period, or the backoff of a cloud that is down. */
  nextProbeInMs(): number {
    if (this.current.kind !== 'down') return this.timings.upEveryMs;
    return Math.min(this.timings.downMaxMs, this.timings.downBaseMs * 2 ** Math.max(0, this.failures - 1));
  }
}
