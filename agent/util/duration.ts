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
