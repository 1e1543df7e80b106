import type { SourceError } from '../source/source.ts';
import type { SyncStatusStore } from './status.ts';
import { referencedByDependent } from './depends-on.ts';

/**
 * A Sync's reasons, in one table, and how each outcome sets the conditions.
 * `Ready` is the Sync's verdict (the newest revision is applied), `Stalled`
 * says a person must act, `SourceReady` is the fetch side's own verdict.
 * Reasons are stable CamelCase: alerts and tests match on them.
 */

/** Source failures: the reason, and whether a human must act (Stalled) or a retry may fix it. */
export const sourceReasons: Record<SourceError['failure'], { reason: string; stalled: boolean }> = {
  unreachable: { reason: 'SourceUnreachable', stalled: false },
  auth: { reason: 'AuthenticationFailed', stalled: true },
  'ref-not-found': { reason: 'RefNotFound', stalled: true },
  signature: { reason: 'SignatureVerificationFailed', stalled: true },
  path: { reason: 'PathNotFound', stalled: true },
  artifact: { reason: 'ArtifactRefused', stalled: true },
  bound: { reason: 'BoundExceeded', stalled: true },
};

export const reasons = {
  pending: 'Pending',
  progressing: 'Progressing',
  fetched: 'ArtifactReady',
  fetchFailed: 'FetchFailed',
  artifactFailed: 'ArtifactFailed',
  validationFailed: 'ValidationFailed',
  /** A revision dropping an object a depending Sync still references: held, the last good revision applied (issue 48). */
  referencedByDependent,
  applyFailed: 'ApplyFailed',
  deletionHeld: 'DeletionHeld',
  succeeded: 'ReconciliationSucceeded',
  retrying: 'Retrying',
  idle: 'Idle',
  retryScheduled: 'RetryScheduled',
  dependencyNotReady: 'DependencyNotReady',
  dependencyCycle: 'DependencyCycle',
  healthCheckFailed: 'HealthCheckFailed',
} as const;

/** Sentences end with a full stop before more is appended. */
function sentence(text: string): string {
  return text.replace(/([^.!?])$/, '$1.');
}

export function progressing(st: SyncStatusStore, message: string): void {
  st.condition('Reconciling', 'True', reasons.progressing, message);
}

export function fetched(st: SyncStatusStore, revision: string): void {
  st.status.lastFetchedRevision = revision;
  st.condition('SourceReady', 'True', reasons.fetched, `fetched revision ${revision}`);
}

/** The source failed: the last applied revision stays applied (and drift correction may still re-apply it). */
export function fetchFailed(st: SyncStatusStore, reason: string, stalled: boolean, message: string): void {
  const keep = st.status.lastAppliedRevision ? ` The last applied revision ${st.status.lastAppliedRevision} stays applied.` : '';
  st.condition('SourceReady', 'False', reason, message);
  st.condition('Ready', 'False', reason, `${sentence(message)}${keep}`);
  st.condition(
    'Stalled',
    stalled ? 'True' : 'False',
    stalled ? reason : reasons.retrying,
    stalled ? 'fix the source settings; the agent keeps retrying' : 'retrying with backoff',
  );
}

export function artifactFailed(st: SyncStatusStore, revision: string, message: string): void {
  st.condition('Ready', 'False', reasons.artifactFailed, `cannot copy revision ${revision}: ${message}`);
}

/** A revision failed validation: nothing from it was applied; `lines` name files as the repository does. */
export function rejected(st: SyncStatusStore, revision: string, lines: string[], held = false): void {
  const more = lines.length > 1 ? ` (and ${lines.length - 1} more)` : '';
  const keep = st.status.lastAppliedRevision ? `; ${st.status.lastAppliedRevision} stays applied` : '';
  const reason = held ? reasons.referencedByDependent : reasons.validationFailed;
  st.condition('Ready', 'False', reason, `revision ${revision} rejected, nothing from it applied${keep}: ${lines[0] ?? 'invalid'}${more}`);
  st.condition(
    'Stalled',
    'True',
    reason,
    held
      ? 'remove the references named in Ready from the Syncs that depend on this one; looked at again every interval'
      : 'fix the files named in Ready and push again',
  );
}

export function applyFailed(st: SyncStatusStore, reason: string, message: string): void {
  st.condition('Ready', 'False', reason, message);
  st.condition('Stalled', 'False', reasons.retrying, 'retrying with backoff');
}

/** `message`: the front end's own word on which objects and how to confirm them (the cluster's annotation). */
export function held(st: SyncStatusStore, revision: string, count: number, message?: string): void {
  st.condition(
    'Ready',
    'False',
    reasons.deletionHeld,
    message ??
      `${revision} applied except ${count} deletions held by the mass-delete guard (massDeleteThreshold); apply them with kupenstack apply --prune --allow-mass-delete`,
  );
  st.condition('Stalled', 'True', reasons.deletionHeld, 'waiting for a person to confirm the deletions');
}

export function succeeded(st: SyncStatusStore, revision: string, summary: string): void {
  st.condition('Ready', 'True', reasons.succeeded, `applied revision ${revision}: ${summary}`);
  st.condition('Stalled', 'False', reasons.succeeded, '');
}

export function finished(st: SyncStatusStore, ok: boolean): void {
  st.condition(
    'Reconciling',
    'False',
    ok ? reasons.idle : reasons.retryScheduled,
    ok ? 'waiting for the next interval, schedule or webhook' : 'waiting for the retry',
  );
}
