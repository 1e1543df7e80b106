import { createHash } from 'node:crypto';

/**
 * The ownership marker: who created an OpenStack object (the owner, i.e. this
 * KupenStack instance or Sync) and for which manifest (`Kind/name`; the
 * namespace is the project). It is written in the same call that creates the
 * object, so a crash can never leave an object of ours unmarked — which is
 * what makes adoption after a crash, and prune, safe.
 *
 * Where it lives depends on what the service accepts at creation:
 * - Nova servers, Glance images, Keystone projects: tags + metadata/properties;
 * - Cinder volumes: metadata;
 * - Neutron (Zed has no tags on create) and Nova flavors: a suffix of the description;
 * - Octavia (tags on create since Stein): three tags, on the load balancer and on each child.
 * The marker also carries a short hash of the fields that cannot change in
 * place, so a changed manifest (replace) is told apart from drift (report).
 */
export interface Marker {
  owner: string;
  ref: string;
  specHash: string;
}

export const ownerTagPrefix = 'kupenstack-owner:';
export const metaOwner = 'kupenstack_owner';
const metaRef = 'kupenstack_ref';
const metaHash = 'kupenstack_spec';

export function ownerTag(owner: string): string {
  return `${ownerTagPrefix}${owner}`;
}

const tagRef = 'kupenstack-ref:';
const tagSpec = 'kupenstack-spec:';

/** The marker as tags (Octavia): owner, ref and spec hash, each a tag of its own. */
export function markerTags(marker: Marker): string[] {
  return [ownerTag(marker.owner), `${tagRef}${marker.ref}`, `${tagSpec}${marker.specHash}`];
}

export function markerFromTags(tags: unknown): Marker | undefined {
  if (!Array.isArray(tags)) return undefined;
  const value = (prefix: string): string | undefined =>
    (tags as unknown[]).find((t): t is string => typeof t === 'string' && t.startsWith(prefix))?.slice(prefix.length);
  const owner = value(ownerTagPrefix);
  const ref = value(tagRef);
  if (owner === undefined || ref === undefined) return undefined;
  return { owner, ref, specHash: value(tagSpec) ?? '' };
}

/** Tags that are not the marker's: the user's own. */
export function userTags(tags: unknown): string[] {
  return Array.isArray(tags)
    ? (tags as unknown[]).filter((t): t is string => typeof t === 'string' && ![ownerTagPrefix, tagRef, tagSpec].some((p) => t.startsWith(p)))
    : [];
}

const descriptionMarker = /\s*\[kupenstack ([a-z0-9][a-z0-9-]*) ([A-Za-z]+\/[a-z0-9.-]+) ([0-9a-f]{8})\]$/;

/** `"web tier [kupenstack prod Network/app-net 1a2b3c4d]"`. */
export function withDescriptionMarker(description: string | undefined, marker: Marker): string {
  const suffix = `[kupenstack ${marker.owner} ${marker.ref} ${marker.specHash}]`;
  return description ? `${description} ${suffix}` : suffix;
}

export function parseDescriptionMarker(description: unknown): { marker?: Marker; description: string } {
  if (typeof description !== 'string') return { description: '' };
  const m = descriptionMarker.exec(description);
  if (!m) return { description };
  return { marker: { owner: m[1]!, ref: m[2]!, specHash: m[3]! }, description: description.slice(0, m.index) };
}

export function markerFromMetadata(meta: Record<string, unknown> | undefined): Marker | undefined {
  const owner = meta?.[metaOwner];
  const ref = meta?.[metaRef];
  if (typeof owner !== 'string' || typeof ref !== 'string') return undefined;
  const hash = meta?.[metaHash];
  return { owner, ref, specHash: typeof hash === 'string' ? hash : '' };
}

export function markerMetadata(marker: Marker): Record<string, string> {
  return { [metaOwner]: marker.owner, [metaRef]: marker.ref, [metaHash]: marker.specHash };
}

/** Stable across key order: what decides replace-versus-drift. */
export function specHash(immutable: Record<string, unknown>): string {
  return createHash('sha256').update(stableJson(immutable)).digest('hex').slice(0, 8);
}

export function stableJson(value: unknown): string {
  const out: string[] = [];
  writeStable(value, out);
  return out.join('');
}

// One output array for the whole value: at 10 000 manifests a run hashes every spec, and the
// chained sort/filter/map/join of each level allocated more than any other part of a no-op.
function writeStable(value: unknown, out: string[]): void {
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(',');
      // JSON.stringify(undefined) is undefined: an undefined element writes nothing, as join('') did.
      if (value[i] !== undefined) writeStable(value[i], out);
    }
    out.push(']');
    return;
  }
  if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    out.push('{');
    let first = true;
    for (const k of Object.keys(record).sort()) {
      const v = record[k];
      if (v === undefined) continue;
      if (!first) out.push(',');
      first = false;
      out.push(JSON.stringify(k), ':');
      writeStable(v, out);
    }
    out.push('}');
    return;
  }
  const text = JSON.stringify(value);
  if (text !== undefined) out.push(text);
}
