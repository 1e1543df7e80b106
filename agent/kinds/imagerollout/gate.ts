import { parseRepository } from '../../../oci/reference.ts';
import type { ImageRolloutSpec } from '../../model/kinds.generated.ts';
import type { FollowedTag, GateDecision } from '../kit/image-memory.ts';
import { waveOf } from './selector.ts';
import type { RolloutState } from './waves.ts';

/** A rollout as the gate reads it: its name, spec and last written status. */
export interface RolloutView {
  name: string;
  spec: ImageRolloutSpec;
  state: RolloutState | undefined;
}

/** Same registry and repository (whatever the spelling), and the same tag or semver range. */
export function governs(spec: ImageRolloutSpec, followed: FollowedTag): boolean {
  const a = safeParse(spec.source.repository);
  const b = safeParse(followed.repository);
  if (!a || !b || a.registry.toLowerCase() !== b.registry.toLowerCase() || a.repository !== b.repository) return false;
  return spec.source.semver !== undefined ? followed.semver === spec.source.semver : followed.semver === undefined && followed.tag === spec.source.tag;
}

function safeParse(repository: string): { registry: string; repository: string } | undefined {
  try {
    return parseRepository(repository);
  } catch {
    return undefined;
  }
}

/**
 * Which digest a namespace's Image of a governed tag uses now: the target
 * once the namespace's wave is admitted (Progressing, Soaking, Succeeded),
 * else the stable one; every namespace the stable one after a failure.
 * Undefined before the controller first looked at the rollout (no stable digest yet).
 */
export function decide(r: RolloutView, labels: Readonly<Record<string, string>>): GateDecision | undefined {
  const s = r.state;
  if (!s?.stableDigest) return undefined;
  const target = s.targetDigest ?? s.stableDigest;
  if (target === s.stableDigest) return { digest: s.stableDigest, reason: `rollout ${r.name}: stable` };
  const failed = s.waves.find((w) => w.phase === 'Failed');
  if (failed) return { digest: s.stableDigest, reason: `rolled back by rollout ${r.name}: wave ${failed.name} failed (${failed.message ?? ''})` };
  const name = waveOf(r.spec, labels);
  const wave = s.waves.find((w) => w.name === name);
  if (wave && wave.phase !== 'Pending') return { digest: target, reason: `rollout ${r.name}: wave ${name} admitted` };
  const current = s.waves.find((w) => w.name === s.currentWave);
  const where = current ? `wave ${current.name} ${current.phase.toLowerCase()}${current.message ? ` (${current.message})` : ''}` : 'earlier waves in progress';
  return { digest: s.stableDigest, reason: `held by rollout ${r.name} in wave ${name}: ${where}` };
}
