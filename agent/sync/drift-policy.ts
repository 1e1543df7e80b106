import type { Trigger } from './scheduler.ts';

/**
 * Whether a run re-applies what is applied, to correct drift: timed runs do
 * (Flux's interval semantics); retries only once an interval has passed since
 * the last apply, so a source that stays broken does not turn every retry
 * into a full apply; webhooks and watches only look for new revisions.
 * A registry notification re-applies what is applied: the revision did not
 * change, the tag an Image follows did (and the Image resolves again).
 */
export function driftDue(trigger: Trigger, lastApplyAt: number, intervalMs: number, now: number = Date.now()): boolean {
  if (trigger === 'interval' || trigger === 'schedule' || trigger === 'startup' || trigger === 'registry') return true;
  if (trigger === 'retry') return now - lastApplyAt >= intervalMs;
  return false;
}
