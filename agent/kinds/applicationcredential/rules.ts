import { parseDuration } from '../../util/duration.ts';
import { ruleKey, type AccessRule } from './access-rules.ts';
import { defaultGrace } from './generations.ts';
import type { Manifest } from '../../model/manifest.ts';
import type { KindRules, RuleFinding } from '../kit/rule.ts';

/**
 * An ApplicationCredential's own checks: a rotation period no longer than
 * the grace would keep a third credential alive before the first is gone,
 * and two manifests writing one Secret would overwrite each other's
 * credential at every run. Access rules: a rule given twice is a slip (Keystone
 * would keep one), and with `unrestricted` the holder could make itself a
 * credential without them.
 */
export const applicationCredentialRules: KindRules = {
  kind: 'ApplicationCredential',
  check(manifests) {
    const out: RuleFinding[] = [];
    const secrets = new Map<string, string>();
    for (const m of manifests) {
      const spec = m.spec as { rotateAfter?: string; gracePeriod?: string; secretRef?: { name?: string }; accessRules?: AccessRule[]; unrestricted?: boolean };
      out.push(...accessRuleFindings(m, spec.accessRules ?? [], spec.unrestricted === true));
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

function accessRuleFindings(m: Manifest, rules: readonly AccessRule[], unrestricted: boolean): RuleFinding[] {
  const out: RuleFinding[] = [];
  const seen = new Map<string, number>();
  rules.forEach((r, i) => {
    const first = seen.get(ruleKey(r));
    if (first === undefined) seen.set(ruleKey(r), i);
    else
      out.push({
        manifest: m,
        code: 'appcred.access-rule-twice',
        path: ['spec', 'accessRules', i],
        message: `access rule ${ruleKey(r)} is given twice (also accessRules[${first}]); remove one`,
      });
  });
  if (unrestricted && rules.length > 0)
    out.push({
      manifest: m,
      code: 'appcred.unrestricted-with-rules',
      path: ['spec', 'unrestricted'],
      message:
        'unrestricted: true lets the holder make itself a new credential without these accessRules, so they would limit nothing; remove unrestricted or the accessRules',
    });
  return out;
}
