import type { DiskRequest, ResolvedDisk } from '../../../oci/disk-source.ts';
import { parseRepository } from '../../../oci/reference.ts';
import { chooseSemverTag } from '../../../lib/semver-tag.ts';
import { DiskSources } from '../../glance/registry-source.ts';


/** A tag moved in a registry (the shape every sender's parser gives). */
export interface MovedTag {
  /** Registry host[:port]; absent when the sender does not name it (then any registry's repository of that path matches). */
  host?: string;
  repository: string;
  tag?: string;
}

interface Follow {
  owner: string;
  /** The manifest's address (`namespace/Image/name`): what a controller requeues. */
  address: string;
  registry: string;
  repository: string;
  tag?: string;
  semver?: string;
}

/** Manifests come and go with revisions; forgetting the oldest costs at most an Image resolved at its interval instead of at once. */
const maxFollows = 10_000;

/**
 * What the Image kind remembers between runs, owned by the front end that
 * runs them (the standalone agent, the controller; a one-shot `apply` makes
 * its own) and handed to the engine (EngineDeps.images): which Images follow
 * which repository and tag, so a registry notification marks exactly those
 * as moved (resolveManifest then asks the registry again whatever their
 * interval) and says which owners (Syncs) to run; the last resolution per
 * manifest (`interval`, `schedule`); and the registry clients, so token
 * caches and connections are shared. A controller that loses leadership
 * drops the object and starts a fresh one. Nothing here talks to a registry.
 */
export class ImageFollows {
  private readonly follows = new Map<string, Follow>();
  private readonly movedAt = new Map<string, number>();
  /** Last resolution per manifest, for `interval` and `schedule` (oci.ts resolveManifest; see oci-poll.ts). */
  readonly resolved = new Map<string, { disk: ResolvedDisk; at: number }>();
  /** One registry client per credentials and advice (glance/registry-source.ts). */
  readonly sources = new DiskSources();

  /** Called where a manifest is resolved: `key` names the manifest's resolution (resolveManifest's cache key). */
  noteFollow(key: string, owner: string, address: string, request: DiskRequest): void {
    if (request.digest !== undefined) return; // a pinned digest never moves
    const { registry, repository } = parseRepository(request.repository);
    this.follows.delete(key);
    this.follows.set(key, { owner, address, registry, repository, ...(request.semver !== undefined ? { semver: request.semver } : { tag: request.tag ?? 'latest' }) });
    while (this.follows.size > maxFollows) {
      const oldest = this.follows.keys().next().value!;
      this.follows.delete(oldest);
      this.movedAt.delete(oldest);
    }
  }

  /** Whether a push marked this resolution moved at or after `since` (the start of the last resolution). */
  movedSince(key: string, since: number): boolean {
    const at = this.movedAt.get(key);
    return at !== undefined && at >= since;
  }

  /** Marks this owner's Images that follow one of the pushed tags as moved now; returns their addresses (empty: none follows). */
  markMoved(owner: string, pushes: readonly MovedTag[], now = Date.now()): string[] {
    const wheres = pushes.map((p) => ({ push: p, where: normalised(p) })).filter((x) => x.where !== undefined);
    const marked = new Set<string>();
    for (const [key, f] of this.follows) {
      if (f.owner !== owner) continue;
      if (wheres.some((x) => matches(f, x.push, x.where!))) {
        this.movedAt.set(key, now);
        marked.add(f.address);
      }
    }
    return [...marked].sort();
  }

  /** Marks what these manifests (addresses) resolved as moved now: the next run asks the registry again whatever their interval. */
  markAddressesMoved(owner: string, addresses: readonly string[], now = Date.now()): void {
    const wanted = new Set(addresses);
    for (const [key, f] of this.follows) if (f.owner === owner && wanted.has(f.address)) this.movedAt.set(key, now);
  }
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
 * Whether an Image spec (as a custom resource holds it, not yet validated)
 * follows one of the pushed tags: the controller finds the Image CRs a
 * notification names in its watch cache, also those no run resolved yet.
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
  const f: Follow = { owner: '', address: '', ...where, ...(typeof oci.semver === 'string' ? { semver: oci.semver } : { tag: typeof oci.tag === 'string' ? oci.tag : 'latest' }) };
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
