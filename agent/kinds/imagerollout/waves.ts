import type { ImageRolloutStatus } from '../../model/kinds.generated.ts';

/**
 * An ImageRollout's wave state machine, pure (the controller's loop,
 * controller/rollouts/, feeds it what the registry and the cluster say and
 * writes what it returns). Per wave:
 *
 *   Pending → Progressing (admitted: its Images may use the target)
 *           → Soaking (healthy: every Image at the target and Ready, VMs Ready)
 *           → Succeeded (healthy for the whole soak) → the next wave is admitted
 *   Progressing or Soaking → Failed (a server in ERROR, or not healthy within
 *   the progress deadline): the rollout stops and every namespace goes back
 *   to the stable digest; only a new tag move starts a new rollout.
 *   Soaking → Progressing when health is lost without a failure (the soak
 *   starts again: "healthy over the soak").
 *
 * When every wave succeeded the target becomes the stable digest.
 */

export type WavePhase = 'Pending' | 'Progressing' | 'Soaking' | 'Succeeded' | 'Failed';
export type WaveStatus = NonNullable<ImageRolloutStatus['waves']>[number];
export type RolloutState = Pick<ImageRolloutStatus, 'stableDigest' | 'targetDigest' | 'currentWave'> & { waves: WaveStatus[] };

/** One wave as the spec and the namespaces' labels make it now. */
export interface WavePlan {
  name: string;
  soakMs: number;
  namespaces: string[];
}

/** A wave's health as the controller found it. */
export type WaveHealth = { state: 'healthy' } | { state: 'waiting'; why: string } | { state: 'failed'; why: string };

/** A wave's phase change: an Event on the ImageRollout. */
export interface Transition {
  wave: string;
  to: WavePhase | 'RolledOut' | 'Adopted' | 'Reverted' | 'Started';
  message: string;
  warning?: boolean;
}

export interface StepInput {
  state: RolloutState;
  /** Where the tag points now (its digest). */
  resolved: string;
  waves: WavePlan[];
  health: (wave: WavePlan) => WaveHealth;
  now: number;
  progressDeadlineMs: number;
}

export interface StepResult {
  state: RolloutState;
  transitions: Transition[];
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** One look: the next state and what changed. */
export function step(input: StepInput): StepResult {
  const { state, resolved, waves, now } = input;
  const transitions: Transition[] = [];
  if (state.stableDigest === undefined) {
    // The first look: the tag's digest now is what every namespace already has; nothing to roll out.
    const done = waves.map((w) => succeeded(w, now, 'on the stable digest'));
    transitions.push({ wave: '', to: 'Adopted', message: `stable digest ${resolved}: the tag's digest when the rollout was first seen` });
    return { state: { stableDigest: resolved, targetDigest: resolved, waves: done }, transitions };
  }
  if (resolved === state.stableDigest) {
    const moved = state.targetDigest !== undefined && state.targetDigest !== resolved;
    if (moved)
      transitions.push({
        wave: '',
        to: 'Reverted',
        message: `the tag points to the stable digest ${resolved} again: rollout of ${state.targetDigest} dropped`,
      });
    const waveStates = moved ? waves.map((w) => succeeded(w, now, 'on the stable digest')) : merged(state.waves, waves);
    return { state: { stableDigest: resolved, targetDigest: resolved, waves: waveStates }, transitions };
  }
  if (resolved !== state.targetDigest) {
    // A new tag move (after a success, a failure, or during a rollout): a new rollout from the first wave.
    transitions.push({ wave: '', to: 'Started', message: `rolling ${resolved} out in ${waves.length} waves (stable: ${state.stableDigest})` });
    const fresh: RolloutState = { stableDigest: state.stableDigest, targetDigest: resolved, waves: waves.map((w) => pending(w)) };
    return advance({ ...input, state: fresh }, transitions);
  }
  return advance({ ...input, state: { ...state, waves: merged(state.waves, waves) } }, transitions);
}

/** The waves of the spec now, each with its phase kept by name (a wave added while rolling is Pending). */
function merged(previous: readonly WaveStatus[], waves: readonly WavePlan[]): WaveStatus[] {
  return waves.map((w) => ({ ...(previous.find((p) => p.name === w.name) ?? { name: w.name, phase: 'Pending' as const }), namespaces: w.namespaces }));
}

function pending(w: WavePlan): WaveStatus {
  return { name: w.name, phase: 'Pending', namespaces: w.namespaces, message: 'waiting for the waves before it' };
}

function succeeded(w: WavePlan, now: number, message: string): WaveStatus {
  return { name: w.name, phase: 'Succeeded', namespaces: w.namespaces, finishedAt: iso(now), message };
}

/** Moves the waves on as far as health allows in this look (an empty or zero-soak wave does not cost a look). */
function advance(input: StepInput, transitions: Transition[]): StepResult {
  const state: RolloutState = { ...input.state, waves: [...input.state.waves] };
  if (state.waves.some((w) => w.phase === 'Failed')) return { state, transitions };
  for (let i = 0; i < state.waves.length; i++) {
    const before = state.waves[i]!;
    if (before.phase === 'Succeeded') continue;
    state.currentWave = before.name;
    const plan = input.waves.find((w) => w.name === before.name) ?? { name: before.name, soakMs: 0, namespaces: [] };
    const after = lookAt(before, plan, input);
    state.waves[i] = after;
    if (after.phase !== before.phase) transitions.push(transitionOf(after, plan));
    // A wave that moved from Pending to Progressing is looked at again at once (it may be healthy already).
    if (after.phase === 'Progressing' && before.phase === 'Pending') {
      i--;
      continue;
    }
    if (after.phase !== 'Succeeded') return { state, transitions };
  }
  // Every wave succeeded: the target is the stable digest now.
  const { currentWave: _done, ...rest } = state;
  transitions.push({ wave: '', to: 'RolledOut', message: `${state.targetDigest} rolled out to every wave; it is the stable digest now` });
  return { state: { ...rest, stableDigest: state.targetDigest }, transitions };
}

function transitionOf(w: WaveStatus, plan: WavePlan): Transition {
  return {
    wave: w.name,
    to: w.phase,
    message: `wave ${w.name} (${plan.namespaces.length} namespaces) ${w.phase}: ${w.message ?? ''}`,
    ...(w.phase === 'Failed' ? { warning: true } : {}),
  };
}

/** One wave's next phase. */
function lookAt(w: WaveStatus, plan: WavePlan, input: StepInput): WaveStatus {
  const { now } = input;
  switch (w.phase) {
    case 'Pending':
      return {
        name: w.name,
        phase: 'Progressing',
        namespaces: plan.namespaces,
        startedAt: iso(now),
        message: 'admitted: its Images may use the target digest',
      };
    case 'Progressing': {
      if (plan.namespaces.length === 0) return { ...w, phase: 'Succeeded', finishedAt: iso(now), message: 'no namespace in this wave' };
      const h = input.health(plan);
      if (h.state === 'failed') return { ...w, phase: 'Failed', finishedAt: iso(now), message: h.why };
      if (h.state === 'healthy') {
        if (plan.soakMs <= 0) return { ...w, phase: 'Succeeded', finishedAt: iso(now), message: 'healthy at the target digest' };
        return { ...w, phase: 'Soaking', soakingSince: iso(now), message: `healthy; soaking until ${iso(now + plan.soakMs)}` };
      }
      const started = Date.parse(w.startedAt ?? iso(now));
      if (now - started > input.progressDeadlineMs)
        return { ...w, phase: 'Failed', finishedAt: iso(now), message: `not healthy within ${Math.round(input.progressDeadlineMs / 1000)} s: ${h.why}` };
      return { ...w, message: h.why };
    }
    case 'Soaking': {
      const h = input.health(plan);
      if (h.state === 'failed') return { ...w, phase: 'Failed', finishedAt: iso(now), message: h.why };
      if (h.state === 'waiting') {
        const { soakingSince: _lost, ...rest } = w;
        return { ...rest, phase: 'Progressing', message: `health lost while soaking (${h.why}); the soak starts again once healthy` };
      }
      const until = Date.parse(w.soakingSince ?? iso(now)) + plan.soakMs;
      if (now >= until) return { ...w, phase: 'Succeeded', finishedAt: iso(now), message: `healthy for the whole soak (${Math.round(plan.soakMs / 1000)} s)` };
      return { ...w, message: `healthy; soaking until ${iso(until)}` };
    }
    default:
      return w;
  }
}
