import { parseRepository } from '../../oci/reference.ts';
import { chooseSemverTag } from '../../lib/semver-tag.ts';

/**
 * Which Images (and which Syncs' OCI sources) a registry notification moves:
 * the tag-to-Image rule both front ends apply to what they hold (the
 * standalone Sync runner to its revisions, the controller to its watch
 * cache). What moved is then their own record, handed to the engine as
 * `refresh` (act/apply.ts EngineDeps). No registry request is made here.
 */

/** A tag moved in a registry (the shape every sender's parser gives). */
export interface MovedTag {
  /** Registry host[:port]; absent when the sender does not name it (then any registry's repository of that path matches). */
  host?: string;
  repository: string;
  tag?: string;
}

/** What an Image follows: a repository and a tag or semver range (a pinned digest follows nothing). */
interface Follow {
  registry: string;
  repository: string;
  tag?: string;
  semver?: string;
}

/** Same repository, whatever the spelling of its name (Docker Hub short names, `library/`). */
function normalised(push: MovedTag): { registry?: string; repository: string } | undefined {
  try {
    return push.host !== undefined ? parseRepository(`${push.host}/${push.repository}`) : { repository: push.repository.toLowerCase() };
  } catch {
    return undefined;
  }
}

function matches(f: Follow, push: MovedTag, where: { registry?: string; repository: string }): boolean {
  if (push.tag === undefined || where.repository !== f.repository) return false;
  if (where.registry !== undefined && where.registry.toLowerCase() !== f.registry.toLowerCase()) return false;
  return f.semver !== undefined ? chooseSemverTag([push.tag], f.semver) !== undefined : f.tag === push.tag;
}

/**
 * Whether an Image spec (as a manifest or custom resource holds it, valid or
 * not) follows one of the pushed tags: same repository and registry, the
 * tag (`latest` when none is named), or a tag the semver range takes.
 */
export function specFollows(spec: unknown, pushes: readonly MovedTag[]): boolean {
  const oci = (spec as { source?: { oci?: { repository?: unknown; tag?: unknown; semver?: unknown; digest?: unknown } } } | undefined)?.source?.oci;
  if (!oci || typeof oci.repository !== 'string' || oci.digest !== undefined) return false;
  let where: { registry: string; repository: string };
  try {
    where = parseRepository(oci.repository);
  } catch {
    return false;
  }
  const f: Follow = { ...where, ...(typeof oci.semver === 'string' ? { semver: oci.semver } : { tag: typeof oci.tag === 'string' ? oci.tag : 'latest' }) };
  return pushes.some((p) => {
    const w = normalised(p);
    return w !== undefined && matches(f, p, w);
  });
}

/**
 * Whether a Sync's OCI source (`oci://host/repo` and its ref) follows one of
 * the pushed tags: the same rule as an Image's (same repository and registry,
 * the tag, or a tag the semver range takes; a digest never moves).
 */
export function ociSourceFollows(oci: { url: string; ref: { tag?: string; semver?: string; digest?: string } }, pushes: readonly MovedTag[]): boolean {
  return specFollows({ source: { oci: { repository: oci.url.replace(/^oci:\/\//, ''), ...oci.ref } } }, pushes);
}

/** The addresses of the Images among these manifests that follow one of the pushed tags, sorted, each once. */
export function imagesFollowing(manifests: Iterable<{ address: string; kind: string; spec: unknown }>, pushes: readonly MovedTag[]): string[] {
  const out = new Set<string>();
  for (const m of manifests) if (m.kind === 'Image' && specFollows(m.spec, pushes)) out.add(m.address);
  return [...out].sort();
}
