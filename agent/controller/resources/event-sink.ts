import { randomBytes } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import type { EngineEvent, EventSink } from '../../events/events.ts';
import { apiVersion } from '../../schema/registry.ts';
import type { KubeObject } from './objects.ts';

const eventSource = 'kupenstack-controller';
const repeatWindowMs = 10 * 60_000;
/** Events of a cluster-scoped object (the OpenStackCloud) live here: the API server accepts no other namespace for them. */
const clusterEventNamespace = 'default';

/**
 * Engine events as core/v1 Events on the custom resource they concern, so
 * `kubectl describe` and `kubectl get events` show them. Writes are fire and
 * forget: an Event that cannot be written must not slow or fail a reconcile.
 * Messages come from the engine, which never puts a secret in one.
 */
export function kubeEventSink(
  core: k8s.CoreV1Api,
  lookup: (address: string) => { kind: string; object: KubeObject } | undefined,
  log: (line: string) => void,
  recent: Map<string, number> = new Map(),
): EventSink {
  return (event: EngineEvent) => {
    const target = lookup(event.address);
    if (!target) return;
    // A failure that repeats on every resync is one Event per repeat window, not one per run.
    const key = `${event.address}|${event.reason}|${event.message}`;
    const now = Date.parse(event.at) || Date.now();
    if ((recent.get(key) ?? -Infinity) > now - repeatWindowMs) return;
    recent.set(key, now);
    if (recent.size > 10_000) for (const [k, at] of recent) if (at <= now - repeatWindowMs) recent.delete(k);
    void core
      .createNamespacedEvent({ namespace: target.object.metadata.namespace ?? clusterEventNamespace, body: eventBody(event, target.kind, target.object) })
      .catch((err: unknown) => {
        log(`event   ${event.address}: could not record ${event.reason} (${(err as { code?: number }).code ?? 'no response'})`);
      });
  };
}

function eventBody(event: EngineEvent, kind: string, o: KubeObject): k8s.CoreV1Event {
  const now = new Date(event.at);
  return {
    metadata: { name: `${o.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: o.metadata.namespace ?? clusterEventNamespace },
    involvedObject: {
      apiVersion,
      kind,
      name: o.metadata.name,
      namespace: o.metadata.namespace,
      uid: o.metadata.uid,
      resourceVersion: o.metadata.resourceVersion,
    },
    reason: event.reason,
    message: event.message.slice(0, 1024),
    type: event.severity === 'warning' ? 'Warning' : 'Normal',
    source: { component: eventSource },
    reportingComponent: eventSource,
    reportingInstance: eventSource,
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}
