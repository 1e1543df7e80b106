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

/** What setCondition needs of a condition; a Sync adds its own types (SourceReady) to the three above. */
export interface ConditionLike {
  type: string;
  status: Condition['status'];
  lastTransitionTime: string;
}

/** Sets one condition, keeping lastTransitionTime when the status did not change. Returns the new list. */
export function setCondition<C extends ConditionLike = Condition>(list: readonly C[], next: Omit<C, 'lastTransitionTime'>, now: Date = new Date()): C[] {
  const old = list.find((c) => c.type === next.type);
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now.toISOString();
  return [...list.filter((c) => c.type !== next.type), { ...next, lastTransitionTime } as C];
}
