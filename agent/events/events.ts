/**
 * What the engine tells the world while it works, as typed data. Logs,
 * Prometheus metrics and (in the cluster) Kubernetes Events subscribe to the
 * same stream; none of them parses text. Messages never hold a secret.
 */
export type EngineEventType =
  | 'created'
  | 'updated'
  | 'replaced'
  | 'deleted'
  | 'healed'
  | 'drift-corrected'
  /** Drift seen and left alone: the namespace is paused (controller/resources/paused.ts). */
  | 'drift-detected'
  | 'held'
  | 'rejected'
  | 'failed'
  | 'retrying'
  | 'adopted'
  | 'detached'
  | 'gave-up';

export interface EngineEvent {
  type: EngineEventType;
  /** `namespace/Kind/name` (Manifest.address), or the revision for `rejected`/`held`. */
  address: string;
  kind?: string;
  /** Stable CamelCase reason (Kubernetes Event reason): `Created`, `DriftCorrected`, `HealRebooted`… */
  reason: string;
  /** One sentence a user can act on. */
  message: string;
  /** The OpenStack id concerned, when there is one. */
  id?: string;
  /** Normal or Warning, as Kubernetes Events classify them. */
  severity: 'normal' | 'warning';
  revision?: string;
  at: string;
}

export type EventSink = (event: EngineEvent) => void;

/** Fans one event out to several sinks; a throwing sink never stops the engine or the others. */
export function fanOut(...sinks: EventSink[]): EventSink {
  return (event) => {
    for (const sink of sinks) {
      try {
        sink(event);
      } catch {
        // A broken subscriber (a full log pipe) must not fail a reconcile.
      }
    }
  };
}
