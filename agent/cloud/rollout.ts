import type { RenderedChart } from './render-cloud.ts';

/**
 * What one rollout of a cloud remembers between the passes that make it (progress by requeue:
 * a pass applies the steps, looks once at the gate it reaches and returns a Progress; the next
 * pass goes on from that step). Kept so a gate's deadline counts from its first look, not from
 * each pass, a finished step is not applied and looked at again, and a pass does not render the
 * charts again. The controller drops it when the rollout ends (Ready, failed) or the spec
 * changes, so the next rollout (a resync) applies every step; a standalone run, which waits at
 * each gate, has a fresh one per run.
 */
export interface RolloutMemory {
  /** When each gate (by step label) was first looked at in this rollout. */
  gateSince: Map<string, number>;
  /** The steps this rollout finished (describeStep: group, phase, charts, objects). */
  done: Set<string>;
  /** Job name → uid of the Job this rollout created or kept (a gate counts only that one). */
  jobs: Map<string, string>;
  /** The charts as this rollout rendered them, by the spec they were rendered from. */
  rendered?: { key: string; charts: RenderedChart[] };
}

export const newRolloutMemory = (): RolloutMemory => ({ gateSince: new Map(), done: new Set(), jobs: new Map() });
