/**
 * The ImageRollout kind's one face: its rules (kinds/registry.ts), the wave
 * state machine and gate the controller's rollout loop drives
 * (controller/rollouts/), and the standalone front end's refusal.
 */
export { imageRolloutRules } from './rules.ts';
export { step, type RolloutState, type WaveHealth, type WavePlan, type Transition, type WaveStatus } from './waves.ts';
export { decide, governs, type RolloutView } from './gate.ts';
export { restWave, waveOf } from './selector.ts';
export { refuseRolloutsStandalone } from './standalone.ts';
export { movedTagOf, planWaves, resolveTag, timingsOf } from './plan.ts';
