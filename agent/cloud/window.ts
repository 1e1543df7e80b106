import cron from 'node-cron';
import { KupenstackError } from '../errors.ts';
import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import { parseDuration } from '../util/duration.ts';

/**
 * The cloud's maintenance window at a given time (the clock is the caller's, so tests
 * inject one): open when a cron time of the schedule (in the window's time zone) lies
 * within the last `duration`; otherwise when the next one starts. Only the start of a
 * step is checked against it: a step that runs at the window's end finishes.
 */
export type Window = NonNullable<OpenStackCloudSpec['maintenanceWindow']>;

export interface WindowState {
  open: boolean;
  /** When the open window closes. */
  closesAt?: Date;
  /** When the next window opens (closed windows). */
  opensAt?: Date;
}

/** Look this far ahead for the next window (a yearly schedule still finds its next one). */
const maxScanMinutes = 366 * 24 * 60;

export function windowAt(w: Window | undefined, now: Date): WindowState {
  if (!w) return { open: true };
  if (!cron.validate(w.schedule))
    throw new KupenstackError(
      'cloud.window',
      `spec.maintenanceWindow.schedule "${w.schedule}" is not a cron expression; write five fields (minute hour day-of-month month day-of-week)`,
    );
  const duration = parseDuration(w.duration);
  const task = cron.createTask(w.schedule, () => undefined, { timezone: w.timeZone ?? 'Etc/UTC' });
  try {
    const minute = Math.floor(now.getTime() / 60_000);
    for (let m = minute; (minute - m) * 60_000 < duration; m--) {
      if (task.match(new Date(m * 60_000))) return { open: true, closesAt: new Date(m * 60_000 + duration) };
    }
    for (let m = minute + 1; m - minute <= maxScanMinutes; m++) {
      if (task.match(new Date(m * 60_000))) return { open: false, opensAt: new Date(m * 60_000) };
    }
    return { open: false };
  } finally {
    void task.destroy();
  }
}

export function describeWindow(s: WindowState): string {
  if (s.open) return s.closesAt ? `maintenance window open until ${s.closesAt.toISOString()}` : 'no maintenance window: steps may start at any time';
  return s.opensAt
    ? `outside the maintenance window; the next one opens at ${s.opensAt.toISOString()}`
    : 'outside the maintenance window; none opens within a year';
}
