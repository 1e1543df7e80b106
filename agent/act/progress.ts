import type { Health } from '../kinds/kit/adapter.ts';
import type { Progress } from '../../lib/progress.ts';

export type { Progress } from '../../lib/progress.ts';
export { soonest } from '../../lib/progress.ts';

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
