import { setTimeout as sleep } from 'node:timers/promises';
import { waiting, type Looked } from '../../../lib/progress.ts';
import type { AdapterContext } from './adapter.ts';

export interface LookOptions<T> {
  /** One look: the value once done, undefined for "not yet" (with `why`, what OpenStack shows). */
  look: () => Promise<{ done: T } | { why: string }>;
  /** What is waited for, for the messages. */
  what: string;
  timeoutMs: number;
  /** The wait mode's bound on a growing delay; also the requeue mode's look again. */
  maxDelayMs?: number;
  onTimeout: (why: string) => Error;
}

/**
 * The one place an adapter waits (a unit test holds kinds/ to it): polls in
 * wait mode (standalone apply); in requeue mode (ctx.requeue, the
 * controller) looks once and returns the waiting, so no slot is held while
 * OpenStack works; its callers hand it up (kinds/adapter.ts `Waiting`).
 */
export async function lookAgain<T>(ctx: AdapterContext, opts: LookOptions<T>): Promise<Looked<T>> {
  const maxDelayMs = opts.maxDelayMs ?? 5_000;
  const end = Date.now() + opts.timeoutMs;
  for (let delay = 500; ; delay = Math.min(delay * 2, maxDelayMs)) {
    const seen = await opts.look();
    if ('done' in seen) return seen;
    if (ctx.requeue) return waiting(`${opts.what}: ${seen.why}`, maxDelayMs);
    if (Date.now() > end) throw opts.onTimeout(seen.why);
    await sleep(delay, undefined, ctx.signal ? { signal: ctx.signal } : undefined);
  }
}
