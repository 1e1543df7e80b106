import type { ResolvedDisk } from '../../../oci/disk-source.ts';
import type { Manifest } from '../../model/manifest.ts';
import type { AdapterContext } from '../kit/adapter.ts';
import type { FollowedTag } from '../kit/image-memory.ts';

/**
 * The seam of an ImageRollout (kinds/imagerollout/) in the Image kind: where a
 * followed tag has been resolved, the rollout's gate says which digest this
 * namespace may use now (the target once its wave is admitted, else the
 * stable one). A held or rolled-back Image resolves that digest by digest, with
 * its own registry client and signature policy: a rollout never bypasses
 * verification, and the stable version is still in Glance (keep), so going
 * back is a re-point, not a re-import.
 */

/** Why each manifest got the digest it got this run, for the plan's image line and the TagMoved Event. */
const reasons = new WeakMap<Manifest, string>();

/** The digest a tag names: the index's when there is one (what a rollout records), else the manifest's. */
export const tagDigest = (disk: ResolvedDisk): string => disk.indexDigest ?? disk.manifestDigest;

export async function gateResolution(
  m: Manifest,
  ctx: AdapterContext,
  followed: FollowedTag,
  disk: ResolvedDisk,
  byDigest: (digest: string) => Promise<ResolvedDisk>,
): Promise<ResolvedDisk> {
  const decision = ctx.images?.gate?.decide(ctx.namespace, followed);
  if (!decision) {
    reasons.delete(m);
    return disk;
  }
  reasons.set(m, decision.reason);
  if (tagDigest(disk) === decision.digest) return disk;
  // The tag stays the one followed: the version shows the tag it stands for (oci-tag:), held or not.
  const held = await byDigest(decision.digest);
  return { ...held, ...(disk.tag !== undefined ? { tag: disk.tag } : {}) };
}

/** The rollout's word on this manifest's digest, when a rollout governs its tag. */
export function gateReason(m: Manifest): string | undefined {
  return reasons.get(m);
}
