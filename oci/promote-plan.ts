import { parseDigest } from './digest.ts';
import { OciError } from './errors.ts';
import type { Descriptor, Manifest } from './manifest.ts';
import { ociIndex } from './media-types.ts';
import { parseReference, type Reference } from './reference.ts';

/**
 * What `image promote SRC DST` copies, in the order it is written, worked out
 * from what was read at SRC (pure: promote.ts does the reading and writing).
 * The order is the one a reader never sees half-done: every blob, then the
 * manifests children first (an index after its children, a referrer after its
 * subject), then the cosign tags and the referrers-tag indexes, and the DST
 * tag last, so a tag at DST names only a digest whose closure is all there.
 */

/** One manifest read at SRC: its bytes, written unchanged so its digest stays. */
export interface ManifestNode {
  digest: string;
  raw: Buffer;
  mediaType: string;
  manifest: Manifest;
  /** Put under this tag too (cosign's `sha256-<hex>.sig`/`.att`/`.sbom`), else by digest only. */
  tag?: string;
}

/** What was found at SRC for the promoted digest (and, for an index, for each child). */
export interface SourceGraph {
  /** The promoted manifest and, for an index, its children (before it). */
  subject: ManifestNode[];
  /** Referrers (OCI 1.1 `subject`) and their children, per subject digest. */
  referrers: Map<string, { descriptors: Descriptor[]; nodes: ManifestNode[] }>;
  /** Manifests under cosign's tag scheme (`sha256-<hex>.sig`, `.att`, `.sbom`). */
  cosignTags: ManifestNode[];
}

export interface PromotePlan {
  /** Distinct blobs of every image manifest, first seen first. */
  blobs: Descriptor[];
  /** Manifests in write order (children first), each once. */
  manifests: ManifestNode[];
  /** Per subject digest, the referrers DST must list (its referrers-tag index when it has no referrers API). */
  referrers: Map<string, Descriptor[]>;
}

export const cosignSuffixes = ['sig', 'att', 'sbom'] as const;

/** `sha256-<hex>`: the OCI 1.1 referrers tag schema's tag of a digest. */
export function referrersTag(digest: string): string {
  const { algorithm, hex } = parseDigest(digest);
  return `${algorithm}-${hex}`;
}

/** cosign's tags for a digest: `sha256-<hex>.sig`, `.att`, `.sbom`. */
export function cosignTags(digest: string): string[] {
  return cosignSuffixes.map((s) => `${referrersTag(digest)}.${s}`);
}

/**
 * SRC and DST as the command is given them: SRC a tag or a digest; DST a
 * repository and, optionally, a tag (none: SRC's tag, or no tag when SRC is
 * a digest). A digest on DST is refused: the digest is SRC's, unchanged.
 */
export function parsePromoteArgs(srcText: string, dstText: string): { src: Reference; dst: Reference } {
  const src = parseReference(srcText);
  const dst = parseReference(dstText);
  if (dst.digest !== undefined) {
    throw new OciError(
      'oci.reference',
      `DST "${dstText}" names a digest; write a repository, optionally with :tag (the digest at DST is SRC's, the bytes are copied unchanged)`,
    );
  }
  const tag = dst.tag ?? src.tag ?? (src.digest === undefined ? 'latest' : undefined);
  const srcTag = src.digest === undefined ? (src.tag ?? 'latest') : undefined;
  if (src.registry === dst.registry && src.repository === dst.repository && (tag === undefined || tag === srcTag)) {
    throw new OciError('oci.reference', `SRC "${srcText}" and DST "${dstText}" are the same; name another repository or another tag for DST`);
  }
  return { src, dst: { registry: dst.registry, repository: dst.repository, ...(tag !== undefined ? { tag } : {}) } };
}

/** The blobs an image manifest names (config, layers); an index names none of its own. */
export function blobsOf(manifest: Manifest): Descriptor[] {
  return manifest.kind === 'manifest' ? [manifest.config, ...manifest.layers] : [];
}

export function planPromotion(graph: SourceGraph): PromotePlan {
  const manifests: ManifestNode[] = [];
  const seen = new Set<string>();
  const add = (n: ManifestNode): void => {
    // A manifest both referred to and under a cosign tag is written once, with its tag.
    const key = `${n.digest} ${n.tag ?? ''}`;
    if (seen.has(key) || (n.tag === undefined && seen.has(`${n.digest} `))) return;
    seen.add(key);
    manifests.push(n);
  };
  graph.subject.forEach(add);
  for (const { nodes } of graph.referrers.values()) nodes.forEach(add);
  graph.cosignTags.forEach(add);
  const blobs: Descriptor[] = [];
  const blobSeen = new Set<string>();
  for (const n of manifests) {
    for (const b of blobsOf(n.manifest)) {
      if (blobSeen.has(b.digest)) continue;
      blobSeen.add(b.digest);
      blobs.push(b);
    }
  }
  const referrers = new Map<string, Descriptor[]>();
  for (const [digest, { descriptors }] of graph.referrers) if (descriptors.length > 0) referrers.set(digest, descriptors);
  return { blobs, manifests, referrers };
}

/**
 * The referrers-tag index DST should hold for a subject: what it lists now
 * plus SRC's referrers it misses (by digest), or undefined when it lists them
 * all already (nothing to write: a second promote writes nothing).
 */
export function mergeReferrersIndex(existing: Descriptor[] | undefined, wanted: Descriptor[]): Buffer | undefined {
  const have = new Set((existing ?? []).map((d) => d.digest));
  const missing = wanted.filter((d) => !have.has(d.digest));
  if (missing.length === 0 && existing !== undefined) return undefined;
  const manifests = [...(existing ?? []), ...missing].map(referrerEntry);
  return Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ociIndex, manifests }));
}

/** A referrers-index entry: the fields the spec lists for one, nothing else. */
function referrerEntry(d: Descriptor): Descriptor {
  return {
    mediaType: d.mediaType,
    digest: d.digest,
    size: d.size,
    ...(d.artifactType !== undefined ? { artifactType: d.artifactType } : {}),
    ...(d.annotations !== undefined ? { annotations: d.annotations } : {}),
  };
}

/**
 * Whether DST's manifest under a cosign tag already holds what SRC's holds:
 * the same digest, or every SRC layer among DST's (cosign appends a layer per
 * signature, so a DST signed again since the last promote holds more).
 */
export function cosignTagCovered(src: Manifest, dst: Manifest | undefined, sameDigest: boolean): boolean {
  if (sameDigest) return true;
  if (!dst || src.kind !== 'manifest' || dst.kind !== 'manifest') return false;
  const have = new Set(dst.layers.map((l) => l.digest));
  return src.layers.every((l) => have.has(l.digest));
}
