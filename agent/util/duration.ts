/**
 * Durations as the schemas write them: Go-style sums such as `90s`, `1h30m`,
 * `250ms`. One parser for the whole agent (Sync intervals, heal backoff,
 * image polling, timeouts).
 */
const durationPattern = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function isDuration(text: string): boolean {
  return durationPattern.test(text);
}

/** Milliseconds of a duration; throws a RangeError naming the text when it is not one. */
export function parseDuration(text: string): number {
  if (!isDuration(text)) throw new RangeError(`"${text}" is not a duration; write it like 30s, 5m, 1h30m or 250ms`);
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(n) * unitMs[unit!]!;
  return ms;
}

/** A run's duration as status and logs show it: `1.24s`, `12.3s`, `2m5s`. */
export function formatDuration(ms: number): string {
  return ms >= 60_000 ? `${Math.floor(ms / 60_000)}m${((ms % 60_000) / 1000).toFixed(0)}s` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
}
