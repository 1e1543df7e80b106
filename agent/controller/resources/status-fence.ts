import { isKubeStatus } from '../../kube/errors.ts';

/** How a fenced status write ended. */
export type FencedOutcome =
  | { written: true; resourceVersion: string | undefined }
  /** `stale`: the object changed under this replica and it no longer acts, so it wrote nothing. */
  | { written: false; why: 'not-acting' | 'gone' | 'stale' | 'changed-too-often' };

export interface FencedWrite {
  /** The resourceVersion the status was computed against; undefined writes unfenced (first sight). */
  resourceVersion: string | undefined;
  /** True while this replica may write (leader, shard holder); asked before every attempt. */
  acting: () => boolean;
  /** Server-side apply of the status carrying `resourceVersion` in metadata; answers the new one. */
  apply: (resourceVersion: string | undefined) => Promise<string | undefined>;
  /** Reads the object's current resourceVersion after a 409. */
  read: () => Promise<string | undefined>;
  attempts?: number;
}

/**
 * A status write fenced by resourceVersion (optimistic concurrency, as the Lease
 * itself is written). A replica paused or partitioned while its write was already
 * past the leadership check sends it late; by then the new leader has written, the
 * version moved, and the API server answers 409 instead of letting the old replica
 * undo the newer status. After a 409 the object is read again and the write retried
 * only while this replica still acts. A 404 means the object is gone: nothing to do.
 * Other errors are thrown to the caller, which decides whether status may fail a run.
 */
export async function writeFencedStatus(w: FencedWrite): Promise<FencedOutcome> {
  let resourceVersion = w.resourceVersion;
  for (let attempt = 0; attempt < (w.attempts ?? 3); attempt++) {
    if (!w.acting()) return { written: false, why: attempt === 0 ? 'not-acting' : 'stale' };
    try {
      return { written: true, resourceVersion: await w.apply(resourceVersion) };
    } catch (err) {
      if (isKubeStatus(err, 404)) return { written: false, why: 'gone' };
      if (!isKubeStatus(err, 409)) throw err;
    }
    try {
      resourceVersion = await w.read();
    } catch (err) {
      if (isKubeStatus(err, 404)) return { written: false, why: 'gone' };
      throw err;
    }
  }
  return { written: false, why: 'changed-too-often' };
}

/** Why a fenced write wrote nothing, for the log; undefined when that needs no line (not acting, gone). */
export function unwrittenReason(outcome: FencedOutcome): string | undefined {
  if (outcome.written) return undefined;
  if (outcome.why === 'stale') return 'changed by another writer and this replica does not act any more';
  if (outcome.why === 'changed-too-often') return 'changed under it three times';
  return undefined;
}

/**
 * The newer of two resourceVersions: the watch may deliver an older one after a
 * write already answered. They are opaque; etcd's are decimal revisions, compared
 * only when both are, else the one seen last wins.
 */
export function newerVersion(known: string | undefined, seen: string | undefined): string | undefined {
  if (!seen) return known;
  if (known && /^\d+$/.test(known) && /^\d+$/.test(seen) && BigInt(known) > BigInt(seen)) return known;
  return seen;
}
