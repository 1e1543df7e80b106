import { refName, type KindRules, type RuleFinding } from '../kit/rule.ts';

/**
 * A volume has one source: an image or a snapshot. Cinder makes a volume from
 * a snapshot at least the snapshot's size (its volume's size when taken): a
 * smaller size is refused at create, so it is refused here when the revision
 * declares that volume.
 */
export const volumeRules: KindRules = {
  kind: 'Volume',
  check(manifests, revision) {
    const out: RuleFinding[] = [];
    for (const m of manifests) {
      const snapshotName = refName((m.spec.source as { snapshotRef?: unknown } | undefined)?.snapshotRef);
      if (!snapshotName) continue;
      if (m.spec.imageRef !== undefined) {
        out.push({
          manifest: m,
          code: 'volume.two-sources',
          path: ['spec', 'source', 'snapshotRef'],
          message: 'a volume is made from an image or from a snapshot, not both: remove imageRef or source.snapshotRef',
        });
      }
      const snapshot = revision.find('VolumeSnapshot', snapshotName, m.metadata.namespace);
      const origin = snapshot && refName(snapshot.spec.volumeRef);
      const from = origin ? revision.find('Volume', origin, m.metadata.namespace) : undefined;
      if (typeof from?.spec.size === 'number' && typeof m.spec.size === 'number' && m.spec.size < from.spec.size) {
        out.push({
          manifest: m,
          code: 'volume.smaller-than-snapshot',
          path: ['spec', 'size'],
          message: `size ${m.spec.size} GiB is smaller than snapshot ${snapshotName} of volume ${origin} (${from.spec.size} GiB): Cinder refuses it; set size to ${from.spec.size} or more`,
        });
      }
    }
    return out;
  },
};
