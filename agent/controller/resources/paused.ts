import type { EventSink } from '../../events/events.ts';
import type { Plan } from '../../plan/plan.ts';
import { setCondition, type Condition } from '../../status/conditions.ts';
import type { ResourceStatus, StateStore } from '../../status/store.ts';

/**
 * A namespace paused for incident work by hand (issue 31): with this
 * annotation on the Namespace, its run only plans. What differs between the
 * objects and OpenStack is reported on each object (Ready False, reason
 * `Paused`) and as a Warning Event `DriftNotCorrected`; nothing is written to
 * OpenStack. Removing the annotation resumes: the next run corrects it all.
 * The value says why (an incident number), and is quoted in the messages.
 */
export const pauseAnnotation = 'kupenstack.io/paused';

/** The pause's reason when the namespace is paused (any value, even empty, pauses). */
export function pausedBy(annotations: Record<string, string> | undefined): string | undefined {
  const value = annotations?.[pauseAnnotation];
  return value === undefined ? undefined : value.trim() || 'no reason given';
}

/** One line per object: what a run would do, the field-level drift included. */
export function pendingWork(plan: Plan): Map<string, string> {
  const out = new Map<string, string>();
  const add = (address: string, what: string): void => void out.set(address, out.has(address) ? `${out.get(address)!}; ${what}` : what);
  for (const c of plan.changes) {
    if (c.action === 'noop' || c.action === 'adopt') continue;
    const fields = c.fields.map((f) => `${f.path} ${JSON.stringify(f.before)} → ${JSON.stringify(f.after)}`).join(', ');
    add(c.address, `would ${c.action}${fields ? ` ${fields}` : ''}`);
  }
  for (const d of plan.drift)
    if (d.immutable) add(d.address, `${d.path} is ${JSON.stringify(d.actual)} in OpenStack, ${JSON.stringify(d.expected)} declared (immutable)`);
  return out;
}

/**
 * Writes the paused verdict on every object of the namespace: Reconciling
 * False (nothing runs), and for those that differ from OpenStack Ready False
 * with the drift, plus one Event each (repeats are folded by the Event sink).
 */
export async function reportPaused(o: {
  ns: string;
  why: string;
  addresses: string[];
  plan: Plan;
  store: StateStore;
  events: EventSink;
  kindOf: (address: string) => string | undefined;
  current: (address: string) => ResourceStatus;
  now?: Date;
}): Promise<number> {
  const now = o.now ?? new Date();
  const pending = pendingWork(o.plan);
  const paused = `namespace ${o.ns} is paused (${pauseAnnotation}: ${o.why})`;
  for (const address of o.addresses) {
    const known = o.current(address);
    let conditions = setCondition<Condition>(
      known.conditions ?? [],
      { type: 'Reconciling', status: 'False', reason: 'Paused', message: `${paused}: nothing is written to OpenStack until the annotation is removed` },
      now,
    );
    const work = pending.get(address);
    if (work) {
      const message = `${paused}: drift not corrected: ${work}`;
      conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: 'Paused', message }, now);
      o.events({
        type: 'drift-detected',
        address,
        kind: o.kindOf(address),
        reason: 'DriftNotCorrected',
        message,
        severity: 'warning',
        revision: o.plan.revision,
        at: now.toISOString(),
      });
    }
    await o.store.putResource(address, { ...known, conditions });
  }
  return pending.size;
}
