import type { Health } from '../kinds/adapter.ts';

/**
 * An object OpenStack is still working on (a server building, a volume
 * attaching): not an error, ORC's "poll again later". In requeue mode the
 * engine records it and returns; the front end looks again after `afterMs`
 * instead of a slot waiting meanwhile.
 */
export interface Progress {
  reason: string;
  afterMs: number;
}

/** A progressing object of a run's outcome. */
export interface Progressing extends Progress {
  address: string;
}

/** When the kind does not say: a look every 5 s is what the wait's polling reached too. */
export const defaultLookAgainMs = 5_000;

/** The progress a `progressing` health stands for, or undefined for any other. */
export function progressOf(health: Health | undefined): Progress | undefined {
  if (health?.state !== 'progressing' || health.waitsForUpdate) return undefined;
  return { reason: health.reason, afterMs: health.afterMs ?? defaultLookAgainMs };
}

/** The earliest look again of several, undefined for none. */
export function soonest(list: readonly Progress[]): number | undefined {
  return list.length === 0 ? undefined : Math.min(...list.map((p) => p.afterMs));
}
