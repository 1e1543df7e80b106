import { KupenstackError } from '../errors.ts';
import { egressRefusalIn } from '../net/egress-refused.ts';
import { boundExceededIn } from '../util/bounds.ts';

/**
 * Failures no retry can fix: the object waits for a new spec (or an admin's
 * rule), so it is Stalled with a reason a user can look up, never left to
 * fail quietly run after run.
 */
export interface Refusal {
  /** Condition and Event reason: `EgressRefused`, `ImportRefused`, `BoundExceeded`. */
  reason: string;
  error: KupenstackError;
}

const importCodes = new Set(['import.foreign', 'import.no-project', 'import.not-found', 'import.ambiguous', 'import.unsupported']);

export function refusalOf(err: unknown): Refusal | undefined {
  const egress = egressRefusalIn(err);
  if (egress) return { reason: 'EgressRefused', error: egress };
  // Over a cluster admin's bound (util/bounds.ts): Stalled naming the bound, even when a client wrapped it.
  const bound = boundExceededIn(err);
  if (bound) return { reason: 'BoundExceeded', error: bound };
  if (err instanceof KupenstackError && importCodes.has(err.code)) return { reason: 'ImportRefused', error: err };
  return undefined;
}

/**
 * An import of an object the namespace's project neither owns nor may use
 * (another project's private network, image or volume). The agent's admin
 * role can read it, which is why this is checked here: OpenStack would let
 * the import through. Shared and external networks, public and community
 * images are usable by every project.
 */
export function foreignImport(kind: string, raw: unknown, projectId: string, opts: { adopt?: boolean } = {}): KupenstackError | undefined {
  const r = (raw ?? {}) as Record<string, unknown>;
  const owner = r.project_id ?? r.tenant_id ?? r.owner ?? r['os-vol-tenant-attr:tenant_id'];
  if (typeof owner !== 'string' || owner === '' || owner === projectId) return undefined;
  // Adoption takes ownership (a marker written, later updates and prunes): sharing lends use, never that.
  if (opts.adopt)
    return new KupenstackError(
      'import.foreign',
      `the ${kind} ${typeof r.id === 'string' ? `${r.id} ` : ''}to adopt belongs to another project (${owner}), ` +
        `not this namespace's project (${projectId}): only the project's own objects can be adopted; import it without adopt (observe only) to use it`,
    );
  if (r.shared === true || r['router:external'] === true) return undefined;
  if (r.visibility === 'public' || r.visibility === 'community') return undefined;
  return new KupenstackError(
    'import.foreign',
    `the ${kind} ${typeof r.id === 'string' ? `${r.id} ` : ''}to import belongs to another project (${owner}) ` +
      `and is not shared with this namespace's project (${projectId}); import only objects of this project, shared or external networks, ` +
      `public or community images, or ask the cluster admin to share it`,
  );
}
