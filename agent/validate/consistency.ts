import type { Diagnostic } from '../diagnostic.ts';
import type { Manifest } from '../model/manifest.ts';
import { diagnosticAt } from './report.ts';

/** Combinations of fields each valid alone that contradict each other. */
export function checkConsistency(manifests: Manifest[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const m of manifests) {
    const spec = m.spec;
    if (spec.managementPolicy === 'unmanaged' && spec.import === undefined) {
      out.push(diagnosticAt(m, 'import.required', ['spec', 'managementPolicy'], 'an unmanaged resource only observes an existing OpenStack object: add import with {id} or {filter}, or remove managementPolicy: unmanaged'));
    }
    if (m.kind === 'Subnet') {
      if (spec.disableGateway === true && spec.gatewayIP !== undefined) {
        out.push(diagnosticAt(m, 'subnet.gateway-conflict', ['spec', 'gatewayIP'], 'gatewayIP is set while disableGateway is true; remove one of them'));
      }
      if ((spec.ipVersion ?? 4) === 4) {
        for (const field of ['ipv6AddressMode', 'ipv6RAMode']) {
          if (spec[field] !== undefined) out.push(diagnosticAt(m, 'subnet.ipv6-mode', ['spec', field], `${field} applies to IPv6 subnets only; remove it or set ipVersion: 6`));
        }
      }
    }
    if (m.kind === 'VirtualMachine' && Array.isArray(spec.networks)) {
      (spec.networks as Record<string, unknown>[]).forEach((n, i) => {
        if (n.portRef !== undefined && n.fixedIP !== undefined) {
          out.push(diagnosticAt(m, 'vm.port-fixed-ip', ['spec', 'networks', i, 'fixedIP'], 'a port brings its own addresses: set the address in the Port\'s fixedIPs, or attach by networkRef with fixedIP'));
        }
      });
    }
  }
  return out;
}
