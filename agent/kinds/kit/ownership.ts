import type { Ownership, Remote, Standing, OwnershipView } from './adapter.ts';

/** The kit's ownership entries (KindAdapter.ownership): a project field, Neutron's, or nothing another could own. */

const own: Standing = { is: 'own' };

/** The first string of these fields: the project an object names as its owner. */
export function ownerField(raw: Record<string, unknown>, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    const v = raw[key];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

/**
 * A project-scoped kind: owned when its project field names the namespace's project. `usable`: another
 * project's object every project may use (a shared network, a public image). An object whose answer has
 * no project field was shown to the project's own token (OpenStack judged it visible): usable, never adoptable.
 */
export function byProjectField(keys: readonly string[], rule: string, usable: (raw: Record<string, unknown>) => boolean = () => false): Ownership {
  return {
    rule,
    standing(found, view) {
      const owner = ownerField(found.raw, keys);
      if (owner === view.ctx.projectId) return own;
      if (owner === undefined) return { is: 'usable', whose: `names no project (${keys.join(', ')} absent)` };
      return { is: usable(found.raw) ? 'usable' : 'foreign', whose: `belongs to another project (${owner})` };
    },
    project: (raw) => ownerField(raw, keys),
  };
}

/** Neutron's project fields; shared objects (`shared`, an external network) are usable by every project. */
export const neutronOwnership = (what: string, usableToo = 'a shared or external one'): Ownership =>
  byProjectField(
    ['project_id', 'tenant_id'],
    `${what}: its project_id is the namespace's project (${usableToo} is usable, never adoptable)`,
    (raw) => raw.shared === true || raw['router:external'] === true,
  );

/** Nothing of this kind is ever another's to import or adopt (it exists only as the namespace's own). */
export function neverForeign(rule: string, mine: (found: Remote, view: OwnershipView) => boolean): Ownership {
  return { rule, standing: (found, view) => (mine(found, view) ? own : { is: 'foreign', whose: "is not this namespace's project's" }) };
}
