/**
 * kstatus conditions, shared by every status KupenStack writes: a resource's
 * (per manifest) and a Sync's. `Ready` says whether the object is what was
 * declared; `Reconciling` that work is under way; `Stalled` that it cannot go
 * on without a change from a human (a bad spec, a spent heal budget).
 */
export type ConditionType = 'Ready' | 'Reconciling' | 'Stalled';

export interface Condition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  /** CamelCase, stable: alerts and tests match on it. */
  reason: string;
  message: string;
  lastTransitionTime: string;
  /** The manifest generation the condition was computed for (in-cluster: metadata.generation). */
  observedGeneration?: number;
}

/** Sets one condition, keeping lastTransitionTime when the status did not change. Returns the new list. */
export function setCondition(list: readonly Condition[], next: Omit<Condition, 'lastTransitionTime'>, now: Date = new Date()): Condition[] {
  const old = list.find((c) => c.type === next.type);
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now.toISOString();
  return [...list.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }];
}
