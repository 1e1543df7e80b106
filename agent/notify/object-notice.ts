import type { EngineEvent } from '../events/events.ts';
import { makeNotice, type Notice } from './notice.ts';

/** What the cloud loop knows of its run when it tells: an upgrade is under way (status.upgrade, not yet Succeeded). */
export interface CloudContext {
  upgrading: boolean;
}

/**
 * The engine's and the cloud loop's events that a Sync's targets hear of,
 * as notices: drift corrected, a VM healed, an Image following a moved tag,
 * and, for the cloud (`cloud` given), an upgrade's steps and its failure.
 * Every other event (creates, updates, Events for kubectl) stays in Events
 * and metrics. `revision` is the Sync's last applied revision: what was in
 * force when it happened. The message is the engine's own sentence (it holds
 * no secret; makeNotice drops links).
 */
export function objectNotice(sync: string, revision: string, e: EngineEvent, cloud?: CloudContext): Notice | undefined {
  const summary = `${e.address}: ${e.message}`;
  if (cloud) {
    if (!cloud.upgrading) return undefined;
    if (e.severity === 'warning') return makeNotice('upgrade-failed', sync, revision, `${e.address}: the upgrade stopped (${e.reason})`, e.message, e.address);
    // A step started and the backup before the first one; a passed gate is the same step going on.
    if (e.reason === 'StepStarted' || e.reason === 'BackupDone') return makeNotice('upgrade-step', sync, revision, summary, undefined, e.address);
    return undefined;
  }
  if (e.type === 'drift-corrected') return makeNotice('drift-corrected', sync, revision, summary, undefined, e.address);
  if (e.type === 'healed') return makeNotice('healed', sync, revision, `${e.address}: ${e.reason}: ${e.message}`, undefined, e.address);
  // The engine's update that follows a moved OCI tag (reconcile-node.ts): a new Glance image version.
  if (e.type === 'updated' && e.reason === 'TagMoved') return makeNotice('image-rolled', sync, revision, summary, undefined, e.address);
  return undefined;
}
