import { fanOut, type EngineEvent, type EventSink } from '../events/events.ts';
import type { Logger } from './logger.ts';
import type { AgentMetrics } from './metrics.ts';

/**
 * The runner's subscribers to the engine's typed events: one structured log
 * line and one counter per event, read from the event's fields (never parsed
 * from text). In the cluster, a Kubernetes Events sink joins them.
 */
export function runEventSinks(sync: string, logger: Logger, metrics: AgentMetrics): EventSink {
  return fanOut(logSink(logger), metricsSink(sync, metrics));
}

function logSink(logger: Logger): EventSink {
  return (e: EngineEvent) => {
    const fields = { event: e.type, address: e.address, reason: e.reason, ...(e.id ? { id: e.id } : {}), ...(e.revision ? { revision: e.revision } : {}) };
    if (e.severity === 'warning') logger.warn(fields, e.message);
    else logger.info(fields, e.message);
  };
}

export function metricsSink(sync: string, metrics: AgentMetrics): EventSink {
  return (e: EngineEvent) => metrics.engineEvents.inc({ sync, type: e.type, kind: e.kind ?? 'none' });
}
