import type { KindRules, RuleFinding } from '../kit/rule.ts';

/** Nova takes rules only with the anti-affinity policy (max_server_per_host), and refuses the group otherwise. */
export const serverGroupRules: KindRules = {
  kind: 'ServerGroup',
  check(manifests) {
    const out: RuleFinding[] = [];
    for (const m of manifests) {
      if (m.spec.rules !== undefined && m.spec.policy !== undefined && m.spec.policy !== 'anti-affinity') {
        out.push({
          manifest: m,
          code: 'servergroup.rules-policy',
          path: ['spec', 'rules'],
          message: `Nova accepts rules only with policy anti-affinity, not ${JSON.stringify(m.spec.policy)}: remove spec.rules or set policy: anti-affinity`,
        });
      }
    }
    return out;
  },
};
