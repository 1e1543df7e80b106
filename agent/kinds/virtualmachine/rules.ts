import type { KindRules, RuleFinding } from '../kit/rule.ts';

/** A network attachment through a port takes its addresses from the port. */
export const virtualMachineRules: KindRules = {
  kind: 'VirtualMachine',
  check(manifests) {
    const out: RuleFinding[] = [];
    for (const m of manifests) {
      if (!Array.isArray(m.spec.networks)) continue;
      (m.spec.networks as Record<string, unknown>[]).forEach((n, i) => {
        if (n.portRef !== undefined && n.fixedIP !== undefined) {
          out.push({
            manifest: m,
            code: 'vm.port-fixed-ip',
            path: ['spec', 'networks', i, 'fixedIP'],
            message: "a port brings its own addresses: set the address in the Port's fixedIPs, or attach by networkRef with fixedIP",
          });
        }
      });
    }
    return out;
  },
};
