import { setTimeout as sleep } from 'node:timers/promises';

/**
 * One retry loop for the whole project (agent/ and oci/): jittered exponential backoff, a cap,
 * an optional server-given delay (Retry-After), and a predicate that decides
 * what is worth retrying. Callers say WHAT is safe to retry; this only says when.
 */
export interface RetryOptions {
  /** Retries after the first attempt (0 = try once). */
  retries: number;
  /** Delay before the first retry; doubles each time. */
  baseMs: number;
  maxMs: number;
  /** Whether this error may be retried at all (an unsafe create never is). */
  retryable: (err: unknown, attempt: number) => boolean;
  /** A delay the server asked for (Retry-After), which wins over the backoff. */
  delayHint?: (err: unknown) => number | undefined;
  /** Called before each wait (logging, metrics). */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  signal?: AbortSignal;
  /** Tests pin the jitter. */
  random?: () => number;
}

/** The wait before retry number `attempt` (1-based): base·2^(attempt-1), jittered to 50–150 %, capped. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = Math.min(baseMs * 2 ** Math.max(0, attempt - 1), maxMs);
  return Math.min(exp * (0.5 + random()), maxMs);
}

export async function retry<T>(action: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await action(attempt);
    } catch (err) {
      if (attempt >= opts.retries || !opts.retryable(err, attempt) || opts.signal?.aborted) throw err;
      const hint = opts.delayHint?.(err);
      const delay = hint !== undefined && hint >= 0 ? Math.min(hint, opts.maxMs * 6) : backoffDelay(attempt + 1, opts.baseMs, opts.maxMs, opts.random);
      opts.onRetry?.(err, attempt + 1, delay);
      await sleep(delay, undefined, { signal: opts.signal });
    }
  }
}
