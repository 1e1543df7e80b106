import type { Trigger } from './scheduler.ts';

/**
 * Whether a run re-applies what is applied, to correct drift: timed runs do
 * (Flux's interval semantics); retries only once an interval has passed since
 * the last apply, so a source that stays broken does not turn every retry
 * into a full apply; webhooks and watches only look for new revisions.
 */
export function driftDue(trigger: Trigger, lastApplyAt: number, intervalMs: number, now: number = Date.now()): boolean {
  if (trigger === 'interval' || trigger === 'schedule' || trigger === 'startup') return true;
  if (trigger === 'retry') return now - lastApplyAt >= intervalMs;
  return false;
}
