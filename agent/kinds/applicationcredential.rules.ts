import { parseDuration } from '../util/duration.ts';
import { defaultGrace } from './applicationcredential/generations.ts';
import type { KindRules, RuleFinding } from './rule.ts';

/**
 * An ApplicationCredential's own checks: a rotation period no longer than
 * the grace would keep a third credential alive before the first is gone,
 * and two manifests writing one Secret would overwrite each other's
 * credential at every run.
 */
export const applicationCredentialRules: KindRules = {
  kind: 'ApplicationCredential',
  check(manifests) {
    const out: RuleFinding[] = [];
    const secrets = new Map<string, string>();
    for (const m of manifests) {
      const spec = m.spec as { rotateAfter?: string; gracePeriod?: string; secretRef?: { name?: string } };
      const grace = spec.gracePeriod ?? defaultGrace;
      if (spec.rotateAfter !== undefined && parseDuration(spec.rotateAfter) <= parseDuration(grace)) {
        out.push({
          manifest: m,
          code: 'appcred.rotate-within-grace',
          path: ['spec', 'rotateAfter'],
          message:
            `rotateAfter ${spec.rotateAfter} is not longer than the grace period ${grace}: a new credential would be due before the old one is gone; ` +
            'make rotateAfter longer or gracePeriod shorter',
        });
      }
      const secret = spec.secretRef?.name;
      if (secret === undefined) continue;
      const key = `${m.metadata.namespace ?? ''}/${secret}`;
      const first = secrets.get(key);
      if (first !== undefined) {
        out.push({
          manifest: m,
          code: 'appcred.secret-shared',
          path: ['spec', 'secretRef', 'name'],
          message: `Secret ${secret} already receives ApplicationCredential ${first}'s credential: each would overwrite the other's; name another Secret`,
        });
      } else secrets.set(key, m.metadata.name);
    }
    return out;
  },
};
