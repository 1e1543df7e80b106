import type { ProvidedObjects } from '../validate/references.ts';

/**
 * References across Syncs (issue 48): what a front end tells a Sync run about the Syncs around it.
 * A revision may reference objects that the Syncs it depends on declare (resolved from what they
 * applied), and a revision that drops an object a Sync depending on it still references is held:
 * refused with the reference named, its last good revision left applied, until that reference goes.
 */
export interface CrossSyncLinks {
  /** What the Syncs this one depends on applied; undefined when it depends on none. */
  provided(): Promise<ProvidedObjects | undefined>;
  /** One refusal line per reference a depending Sync still holds to an object this Sync applied and `kept` (the new revision's addresses) drops. */
  stillReferenced(kept: ReadonlySet<string>): Promise<string[]>;
}

export { heldReferences, type AppliedObject, type ProvidedObjects } from '../validate/references.ts';
