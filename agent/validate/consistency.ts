import type { Diagnostic } from '../diagnostic.ts';
import type { Manifest } from '../model/manifest.ts';
import { diagnosticAt } from './report.ts';

/** Common fields, each valid alone, that contradict each other (a kind's own combinations are its rules: kinds/<kind>/rules.ts). */
export function checkConsistency(manifests: Manifest[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const m of manifests) {
    if (m.spec.managementPolicy === 'unmanaged' && m.spec.import === undefined) {
      out.push(
        diagnosticAt(
          m,
          'import.required',
          ['spec', 'managementPolicy'],
          'an unmanaged resource only observes an existing OpenStack object: add import with {id} or {filter}, or remove managementPolicy: unmanaged',
        ),
      );
    }
  }
  return out;
}
