import { KupenstackError } from '../../errors.ts';
import { where, type Manifest } from '../../model/manifest.ts';

/**
 * `kupenstack apply` (and the standalone agent) has no controller to hold
 * namespaces back over a soak: it would move every namespace at once, which
 * is what the rollout's author asked not to happen. So it refuses the
 * revision before anything reaches OpenStack, naming the file, and says the
 * two ways out.
 */
export function refuseRolloutsStandalone(manifests: readonly Manifest[]): void {
  const rollouts = manifests.filter((m) => m.kind === 'ImageRollout');
  if (rollouts.length === 0) return;
  const first = rollouts[0]!;
  throw new KupenstackError(
    'imagerollout.standalone',
    `${where(first)}: ImageRollout "${first.metadata.name}"${rollouts.length > 1 ? ` (and ${rollouts.length - 1} more)` : ''} is carried out by the in-cluster controller only; ` +
      `kupenstack apply would roll the tag out to every namespace at once, so nothing was applied. ` +
      `Apply this repository with the controller (a Sync), or drop the ImageRollout and pin the Images' source.oci.digest`,
  );
}
