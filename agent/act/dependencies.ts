import type { Project } from './project.ts';

/**
 * Standalone references across Syncs (issue 48): what the Syncs a Sync
 * depends on made, handed to its engine run. In the cluster the namespace's
 * run sees every Sync's custom resources at once and needs none of this; the
 * standalone agent runs each Sync's revision alone, under its own owner.
 */
export interface DependencyObjects {
  /**
   * The dependencies' projects: a namespace this Sync has none for uses
   * theirs. Borrowed, never created, tagged or deleted by this Sync (its own
   * namespace cleanup lists only its owner's projects).
   */
  projects: readonly Project[];
  /** Address (`namespace/Kind/name`) → OpenStack id of each object they applied: what a reference to one resolves to. */
  ids: ReadonlyMap<string, string>;
}
