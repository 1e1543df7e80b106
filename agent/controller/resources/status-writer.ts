import type { Condition } from '../../status/conditions.ts';
import type { ResourceStatus } from '../../status/store.ts';
import type { HealAttempt } from '../../status/state.ts';

const common = new Set(['observedGeneration', 'conditions', 'id', 'observed', 'lastSyncTime', 'heal']);

/**
 * A resource's engine state as the CR's `status`: the common fields, and
 * what the adapter observed spread over the fields the kind's CRD declares
 * (`powerState`, `addresses`, `floatingIPAddress`…) so printer columns show
 * them; whatever the CRD has no field for stays under `observed`.
 */
export function statusBody(state: ResourceStatus, generation: number | undefined, statusFields: ReadonlySet<string>): Record<string, unknown> {
  const status: Record<string, unknown> = {};
  if (generation !== undefined) status.observedGeneration = generation;
  if (state.conditions?.length) status.conditions = state.conditions.map((c) => withGeneration(c, generation));
  if (state.id) status.id = state.id;
  if (state.lastSyncTime) status.lastSyncTime = state.lastSyncTime;
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(state.observed ?? {})) {
    if (value === undefined) continue;
    if (statusFields.has(key) && !common.has(key)) status[key] = value;
    else rest[key] = value;
  }
  if (Object.keys(rest).length) status.observed = rest;
  if (statusFields.has('heal') && (state.healHistory?.length || state.gaveUp)) {
    status.heal = {
      attempts: state.heal?.length ?? 0,
      gaveUp: state.gaveUp !== undefined,
      history: (state.healHistory ?? []).slice(-20).map(historyEntry),
    };
  }
  return status;
}

function withGeneration(c: Condition, generation: number | undefined): Condition {
  return generation !== undefined && c.observedGeneration === undefined ? { ...c, observedGeneration: generation } : c;
}

function historyEntry(a: HealAttempt): Record<string, unknown> {
  return {
    time: a.at,
    step: a.step,
    reason: a.reason,
    result: a.result === 'done' ? 'Succeeded' : 'Failed',
    ...(a.error ? { message: a.error.slice(0, 4096) } : {}),
  };
}

/** Two statuses say the same thing (lastTransitionTime and lastSyncTime aside): no write needed. */
export function sameStatus(a: Record<string, unknown> | undefined, b: Record<string, unknown>): boolean {
  return canonical(a ?? {}) === canonical(b);
}

/** The API server returns keys sorted (Go maps); compare without key order, times or Dates. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (key, v: unknown) => {
    if (key === 'lastTransitionTime' || key === 'lastSyncTime') return undefined;
    if (v instanceof Date) return v.toISOString();
    if (v && typeof v === 'object' && !Array.isArray(v)) return Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
    return v;
  });
}
