/**
 * Progress as a value, ORC's WaitingOnOpenStack and Terraform's deferred
 * change: OpenStack or Kubernetes is still working on something this pass
 * acted on (a server building, a Job running, another worker's upload), so
 * the pass returns this instead of waiting, and its caller hands it up to the
 * queue, which looks again after `afterMs`. Not an error and never thrown:
 * one type from the adapters up to the queues. In lib/ so agent/glance,
 * agent/cloud and the engine return the same thing.
 */
export interface Progress {
  reason: string;
  afterMs: number;
}

/** A value or the progress that stands in its place until the next look. */
export type Looked<T> = { done: T } | { waiting: Progress };

export function waiting(reason: string, afterMs: number): { waiting: Progress } {
  return { waiting: { reason, afterMs } };
}

export function isWaiting<T>(looked: Looked<T>): looked is { waiting: Progress } {
  return 'waiting' in looked;
}

/** The earliest look again of several, undefined for none. */
export function soonest(list: readonly Progress[]): number | undefined {
  return list.length === 0 ? undefined : Math.min(...list.map((p) => p.afterMs));
}
