import { KupenstackError } from '../errors.ts';
import { SourceError, type Artifact, type Source } from '../source/source.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import type { Trigger } from './scheduler.ts';
import { fetched, fetchFailed, sourceReasons } from './conditions.ts';
import type { SyncStatusStore } from './status.ts';

export type FetchResult = { artifact: Artifact; error?: undefined } | { artifact?: undefined; error: KupenstackError };

/**
 * The fetch step (Flux's source side): get the newest revision, count it, and
 * set SourceReady. A failure sets Ready/Stalled from the reasons table; it
 * never touches what is applied.
 */
export async function fetchStep(
  source: Source,
  ctx: { sync: string; trigger: Trigger; signal: AbortSignal; store: SyncStatusStore; metrics: AgentMetrics; log: Logger },
): Promise<FetchResult> {
  const { sync, signal, metrics } = ctx;
  const started = performance.now();
  try {
    const artifact = await source.fetch(signal);
    metrics.fetchDuration.observe({ sync, result: 'ok' }, (performance.now() - started) / 1000);
    metrics.fetches.inc({ sync, result: 'ok' });
    ctx.log.debug({ revision: artifact.revision, trigger: ctx.trigger }, 'fetched');
    fetched(ctx.store, artifact.revision);
    return { artifact };
  } catch (err) {
    const error = asError(err, signal);
    const result = err instanceof SourceError ? err.failure : signal.aborted ? 'aborted' : 'error';
    metrics.fetchDuration.observe({ sync, result }, (performance.now() - started) / 1000);
    metrics.fetches.inc({ sync, result });
    const { reason, stalled } =
      error instanceof SourceError
        ? sourceReasons[error.failure]
        : signal.aborted
          ? { reason: abortReason(signal), stalled: false }
          : { reason: 'FetchFailed', stalled: false };
    ctx.log.warn({ reason, trigger: ctx.trigger, error: error.message }, 'fetch failed');
    fetchFailed(ctx.store, reason, stalled, error.message);
    return { error };
  }
}

export function abortReason(signal: AbortSignal): string {
  return signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError' ? 'Timeout' : 'Interrupted';
}

export function asError(err: unknown, signal: AbortSignal): KupenstackError {
  if (err instanceof KupenstackError) return err;
  if (signal.aborted) {
    const timeout = abortReason(signal) === 'Timeout';
    return new KupenstackError(
      timeout ? 'timeout' : 'interrupted',
      timeout ? "the run took longer than the Sync's timeout and was stopped at a safe point" : 'the run was interrupted (agent shutting down)',
      { cause: err },
    );
  }
  return new KupenstackError('internal', err instanceof Error ? err.message : String(err), { cause: err });
}
