import { specOf } from '../../model/kinds.generated.ts';
import type { KindRules, RuleFinding } from '../kit/rule.ts';
import { governs } from './gate.ts';
import { restWave } from './selector.ts';

/**
 * What the schema cannot say about ImageRollouts: wave names unique and not
 * the implicit `rest`, and one rollout per tag (two would gate the same
 * Images two ways).
 */
export const imageRolloutRules: KindRules = {
  kind: 'ImageRollout',
  check(manifests) {
    const out: RuleFinding[] = [];
    for (const [i, m] of manifests.entries()) {
      const spec = specOf(m, 'ImageRollout');
      const seen = new Set<string>();
      for (const [j, w] of spec.waves.entries()) {
        if (w.name === restWave)
          out.push({
            manifest: m,
            code: 'imagerollout.rest',
            path: ['spec', 'waves', j, 'name'],
            message: `"${restWave}" names the implicit last wave (the namespaces no wave selects); give this wave another name`,
          });
        else if (seen.has(w.name))
          out.push({
            manifest: m,
            code: 'imagerollout.wave-name',
            path: ['spec', 'waves', j, 'name'],
            message: `a second wave named "${w.name}"; wave names are unique in a rollout`,
          });
        seen.add(w.name);
      }
      const twin = manifests.slice(0, i).find((o) => {
        const s = specOf(o, 'ImageRollout').source;
        return governs(spec, { repository: s.repository, tag: s.tag, semver: s.semver });
      });
      if (twin)
        out.push({
          manifest: m,
          code: 'imagerollout.same-tag',
          path: ['spec', 'source'],
          message: `ImageRollout "${twin.metadata.name}" (${twin.source.file}) governs the same tag already; one rollout per tag`,
        });
    }
    return out;
  },
};
