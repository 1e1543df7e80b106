import { isDuration, parseDuration } from '../util/duration.ts';
import type { Manifest } from '../model/manifest.ts';
import type { HealAttempt } from '../status/state.ts';

export type HealStep = 'reboot' | 'rebuild' | 'recreate';

const escalation: HealStep[] = ['reboot', 'rebuild', 'recreate'];

export interface HealDecision {
  step?: HealStep;
  attempt: number;
  /** Why nothing is done now: waiting for the backoff, or the budget is spent. */
  wait?: string;
  giveUp?: string;
}

/**
 * The next repair of a failed object from its manifest's `heal` policy:
 * reboot, then rebuild, then recreate, never past `strategy`, at most
 * `maxAttempts` times, `backoff` apart. Attempts of earlier runs count.
 */
export function nextHeal(m: Manifest, attempts: HealAttempt[], now: number): HealDecision {
  const heal = (m.spec.heal ?? {}) as { strategy?: HealStep; maxAttempts?: number; backoff?: string };
  const max = heal.maxAttempts ?? 3;
  const ceiling = escalation.indexOf(heal.strategy ?? 'recreate');
  const attempt = attempts.length + 1;
  if (max === 0) return { attempt, giveUp: 'healing is disabled (heal.maxAttempts: 0)' };
  if (attempts.length >= max)
    return {
      attempt,
      giveUp: `still failed after ${attempts.length} heal attempts (heal.maxAttempts: ${max}); fix the cause and raise maxAttempts or change the manifest`,
    };
  const last = attempts[attempts.length - 1];
  const backoffMs = durationOrZero(heal.backoff ?? '30s') * 2 ** Math.max(0, attempts.length - 1);
  if (last && now - Date.parse(last.at) < backoffMs)
    return { attempt, wait: `next heal attempt after ${new Date(Date.parse(last.at) + backoffMs).toISOString()}` };
  const step = escalation[Math.min(attempts.length, ceiling)] ?? 'recreate';
  return { step, attempt };
}

/** The schema checks durations; an unparsable one counts as zero here, as it always did. */
function durationOrZero(text: string): number {
  return isDuration(text) ? parseDuration(text) : 0;
}
