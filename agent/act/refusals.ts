import { KupenstackError } from '../errors.ts';
import { egressRefusalIn } from '../net/egress-refused.ts';
import { boundExceededIn } from '../util/bounds.ts';

/**
 * Failures no retry can fix: the object waits for a new spec (or an admin's
 * rule), so it is Stalled with a reason a user can look up, never left to
 * fail quietly run after run.
 */
export interface Refusal {
  /** Condition and Event reason: `EgressRefused`, `ImportRefused`, `BoundExceeded`, `AttestationVerificationFailed`, `ConversionFailed`. */
  reason: string;
  error: KupenstackError;
}

// An adoption refused by its marker (another owner's, another manifest's) waits for a new spec like any import.
const importCodes = new Set([
  'import.foreign',
  'import.no-project',
  'import.not-found',
  'import.ambiguous',
  'import.unsupported',
  'adopt.owned-elsewhere',
  'adopt.unsupported',
]);
const conversionCodes = new Set(['image.no-conversion', 'image.not-converted', 'image.import-failed']);

export function refusalOf(err: unknown): Refusal | undefined {
  const egress = egressRefusalIn(err);
  if (egress) return { reason: 'EgressRefused', error: egress };
  // Over a cluster admin's bound (util/bounds.ts): Stalled naming the bound, even when a client wrapped it.
  const bound = boundExceededIn(err);
  if (bound) return { reason: 'BoundExceeded', error: bound };
  if (err instanceof KupenstackError && importCodes.has(err.code)) return { reason: 'ImportRefused', error: err };
  // A version without the attestations its policy requires waits for a new spec or a newly attested version.
  if (err instanceof KupenstackError && err.code === 'image.attestation') return { reason: 'AttestationVerificationFailed', error: err };
  // Glance cannot make this disk raw (no glance-direct, the plugin off, or its conversion failed on the digest): a new digest or Glance's configuration must change.
  if (err instanceof KupenstackError && conversionCodes.has(err.code)) return { reason: 'ConversionFailed', error: err };
  return undefined;
}

/** The fields OpenStack names an object's project by, across the services (Cinder's snapshots under their extension's key). */
const projectFields = ['project_id', 'tenant_id', 'owner', 'os-vol-tenant-attr:tenant_id', 'os-extended-snapshot-attributes:project_id'];

/**
 * An import of an object the namespace's project neither owns nor may use
 * (another project's private network, image or volume), judged by its
 * project field alone. The agent's admin role can read it, which is why this
 * is checked here: OpenStack would let the import through. Shared and
 * external networks, public and community images are usable by every
 * project. Kinds without a project field (flavors, key pairs) are judged by
 * their ownership entry (kinds/kit/ownership.ts, `importRefusal`), not here.
 */
export function foreignImport(kind: string, raw: unknown, projectId: string, opts: { adopt?: boolean } = {}): KupenstackError | undefined {
  const r = (raw ?? {}) as Record<string, unknown>;
  const owner = projectFields.map((k) => r[k]).find((v) => typeof v === 'string' && v !== '');
  if (typeof owner !== 'string' || owner === projectId) return undefined;
  const usable = r.shared === true || r['router:external'] === true || r.visibility === 'public' || r.visibility === 'community';
  return importRefusal({ kind, id: r.id, whose: `belongs to another project (${owner})`, projectId, adopt: opts.adopt === true, usable });
}

export interface ImportRefusal {
  kind: string;
  id: unknown;
  /** Finishes "the Flavor f …": whose the object is (Standing.whose). */
  whose: string;
  projectId: string;
  adopt: boolean;
  /** The project may use it (observe only): only an adoption is refused. */
  usable: boolean;
  /** The kind's rule (Ownership.rule), quoted in the message. */
  rule?: string;
  /** Where the manifest asks for it (file:line). */
  where?: string;
}

/** The refusal of an import or adoption (import.foreign), or undefined when an import may use what it names. */
export function importRefusal(r: ImportRefusal): KupenstackError | undefined {
  if (r.usable && !r.adopt) return undefined;
  const at = r.where ? `${r.where}: ` : '';
  const what = `the ${r.kind} ${typeof r.id === 'string' ? `${r.id} ` : ''}`;
  const rule = r.rule ? ` (owned means ${r.rule})` : '';
  // Adoption takes ownership (a marker written, later updates and prunes): sharing lends use, never that.
  if (r.adopt)
    return new KupenstackError(
      'import.foreign',
      `${at}${what}to adopt ${r.whose}, not this namespace's project (${r.projectId}): only the project's own objects can be adopted${rule}; ` +
        (r.usable ? 'import it without adopt (observe only) to use it' : 'nothing of it was changed'),
    );
  return new KupenstackError(
    'import.foreign',
    `${at}${what}to import ${r.whose} and is not shared with this namespace's project (${r.projectId})${rule}; import only objects of this project, shared or external networks, ` +
      `public or community images, or ask the cluster admin to share it`,
  );
}
