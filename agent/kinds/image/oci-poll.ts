import cron from 'node-cron';
import { parseDuration } from '../../util/duration.ts';
import { KupenstackError } from '../../errors.ts';

/**
 * When to ask the registry again where a tag points. Without `interval` or
 * `schedule` every run re-resolves (one HEAD per repository and tag, shared
 * by the run's manifests); `interval: 1h` re-resolves when the last
 * resolution is an hour old; `schedule` when a cron time (UTC) passed since.
 * The last resolution is kept in the agent process: a restarted agent
 * resolves once at its first run, which is never wrong, only one HEAD early.
 */
export interface PollPolicy {
  interval?: string | undefined;
  schedule?: string | undefined;
}

/** Cron times are checked minute by minute; a gap longer than this is due anyway. */
const maxScanMinutes = 366 * 24 * 60;

export function resolveDue(lastMs: number | undefined, nowMs: number, policy: PollPolicy): boolean {
  if (lastMs === undefined) return true;
  if (policy.interval) return nowMs - lastMs >= parseDuration(policy.interval);
  if (policy.schedule) return cronPassed(policy.schedule, lastMs, nowMs);
  return true;
}

/** Whether a time the cron expression names lies in (from, to]. */
export function cronPassed(expression: string, fromMs: number, toMs: number): boolean {
  if (!cron.validate(expression))
    throw new KupenstackError(
      'image.schedule',
      `spec.schedule "${expression}" is not a cron expression; write five fields (minute hour day-of-month month day-of-week) or @daily, @hourly, …`,
    );
  const task = cron.createTask(expression, () => undefined, { timezone: 'Etc/UTC' });
  try {
    let minute = Math.floor(fromMs / 60_000) + 1;
    const last = Math.floor(toMs / 60_000);
    if (last - minute > maxScanMinutes) return true;
    for (; minute <= last; minute++) if (task.match(new Date(minute * 60_000))) return true;
    return false;
  } finally {
    void task.destroy();
  }
}
