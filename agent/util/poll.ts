import { setTimeout as sleep } from 'node:timers/promises';

/**
 * One poll loop: ask `check` until it answers a value, with a growing delay
 * and a deadline. `check` returns undefined for "not yet". On the deadline
 * `onTimeout` builds the error (the caller knows what it was waiting for).
 */
export interface PollOptions {
  timeoutMs: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Growth of the delay per round (default 1.5). */
  factor?: number;
  signal?: AbortSignal;
  onTimeout: () => Error;
}

export async function poll<T>(check: () => Promise<T | undefined>, opts: PollOptions): Promise<T> {
  const end = Date.now() + opts.timeoutMs;
  let delay = opts.initialDelayMs ?? 500;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw opts.onTimeout();
    await sleep(Math.min(delay, Math.max(0, end - Date.now()) + 1), undefined, { signal: opts.signal });
    delay = Math.min(delay * (opts.factor ?? 1.5), opts.maxDelayMs ?? 5_000);
  }
}
