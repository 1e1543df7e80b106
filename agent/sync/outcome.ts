import type { Progress } from '../../lib/progress.ts';

/**
 * What one apply of a revision came to, as data (fluxcd/pkg ssa's ChangeSet,
 * kustomize-controller's one reconcile): a front end's applier returns it and
 * the Sync run alone records it (sync-run.ts `settle`): the run's record,
 * lastAppliedRevision, the conditions and what is announced.
 */
export type SyncOutcome = SyncSucceeded | SyncHeld | SyncFailed | SyncRejected | SyncStopped;

interface Applied {
  revision: string;
  /** What the apply did, by kind of change (the run record's counts). */
  counts: Record<string, number>;
  /** The applied revision again (drift correction): it leaves the newest revision's rejection standing. */
  drift: boolean;
}

export interface SyncSucceeded extends Applied {
  result: 'Succeeded';
  summary: string;
  /** The Sync's `wait`: Ready only once the applied objects are (the run asks the applier to look at them). */
  wait?: boolean;
}

export interface SyncHeld extends Applied {
  result: 'Held';
  /** Deletions the mass-delete guard held. */
  held: number;
  /** Ready's message when the front end says more (the cluster names the objects and the annotation that confirms them). */
  readyMessage?: string;
}

export interface SyncFailed {
  result: 'Failed';
  revision: string;
  counts?: Record<string, number>;
  drift: boolean;
  /** Ready's reason: ApplyFailed, CloudNotReady, or why the run was aborted. */
  reason: string;
  message: string;
}

export interface SyncRejected {
  result: 'Rejected';
  revision: string;
  /** Why, one line each, files named as the repository names them. */
  refusals: string[];
}

/** This replica stopped leading in the middle of the apply: nothing is recorded, the new leader runs it. */
export interface SyncStopped {
  result: 'Stopped';
  revision: string;
}

/** `wait` (the cluster): one look at the objects a revision applied. */
export type ObjectsLook =
  | { ready: number }
  | { waiting: Progress; objects: number }
  | { notReady: { counts: string; failing: readonly string[]; stalled: boolean } }
  | { unreadable: string };
