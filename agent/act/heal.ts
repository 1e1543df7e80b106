import { KupenstackError } from '../errors.ts';
import type { Remote } from '../kinds/kit/adapter.ts';
import type { Marker } from '../ownership/marker.ts';
import { replaceHash } from '../plan/diff.ts';
import { nextHeal } from '../plan/heal-policy.ts';
import type { HealAttempt, ResourceState } from '../status/state.ts';
import type { Node, Run } from './run.ts';
import { heldWrite, waitGone, waitReady } from './wait.ts';
import { waitingOf } from '../kinds/kit/adapter.ts';
import { know } from './context.ts';
import type { Progress } from './progress.ts';

/**
 * Repairs a failed object by its manifest's heal policy: the adapter reboots
 * or rebuilds, the engine recreates (delete, then create with the marker).
 * Every attempt is recorded; a spent budget stops the healing loudly.
 */
export async function heal(
  node: Node,
  reason: string,
  run: Run,
  followUp: (n: Node) => Promise<Progress | undefined>,
  create: (n: Node, desired: Record<string, unknown>, marker: Marker) => Promise<Remote>,
): Promise<Progress | undefined> {
  const state = (run.opts.resources[node.address] ??= {});
  const decision = nextHeal(node.m, state.heal ?? [], Date.now());
  if (decision.giveUp) {
    state.gaveUp = decision.giveUp;
    throw new KupenstackError('heal.gave-up', `${reason}; ${decision.giveUp}`);
  }
  if (decision.wait) {
    run.out.warnings.push(`${node.address}: failed (${reason}); ${decision.wait}`);
    return undefined;
  }
  const step = decision.step!;
  const attempt: HealAttempt = { step, at: new Date().toISOString(), reason, result: 'done' };
  let progress: Progress | undefined;
  try {
    if (step === 'recreate') {
      progress = waitingOf(await node.adapter.delete(node.pc.ctx, node.remote!)) ?? (await waitGone(node.adapter, node.pc, node.remote!.id, run));
      if (progress) {
        // Requeue mode: a later run creates it once the old one is gone (a create then, not a "deleted outside KupenStack").
        delete state.id;
        return progress;
      }
      const desired = await node.adapter.desired(node.m, node.pc.ctx);
      node.remote = await create(node, desired, { owner: run.opts.owner, ref: node.ref, specHash: replaceHash(node.adapter, desired) });
      know(node.pc, node.ref, node.remote);
      state.id = node.remote.id;
      // What the follow-up leaves for a later run (requeue mode) the next run's update finds again; the look below says whether it is ready.
      await followUp(node);
    } else {
      await node.adapter.heal!(node.pc.ctx, node.remote!, step, node.m);
    }
    run.emit(
      'healed',
      node.address,
      step === 'reboot' ? 'HealRebooted' : step === 'rebuild' ? 'HealRebuilt' : 'HealRecreated',
      `${step} (attempt ${decision.attempt}) because ${reason}`,
      { id: node.remote!.id },
    );
    progress = await waitReady(node, run);
    run.count(node.address, 'healed');
    // The episode is over once the object is ready (a later run that sees it ready, in requeue mode): the next failure starts again from a reboot.
    if (!progress) {
      state.heal = [];
      state.gaveUp = undefined;
    }
  } catch (err) {
    // A write the gate held (requeue mode): the attempt is under way, not failed.
    progress = heldWrite(err);
    if (progress) return progress;
    attempt.result = 'failed';
    attempt.error = err instanceof Error ? err.message : String(err);
    throw err;
  } finally {
    // Still in the episode while it is not ready: its attempt counts toward the budget if the object fails again.
    if (attempt.result === 'failed' || progress) recordHeal(state, attempt);
    else state.healHistory = [...(state.healHistory ?? []), attempt].slice(-20);
  }
  return progress;
}

export function recordHeal(state: ResourceState, attempt: HealAttempt, episode = true): void {
  if (episode) state.heal = [...(state.heal ?? []), attempt].slice(-20);
  state.healHistory = [...(state.healHistory ?? []), attempt].slice(-20);
}
