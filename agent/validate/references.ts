import type { Diagnostic } from '../diagnostic.ts';
import type { Reference } from '../graph/references.ts';
import { addressOf, type Manifest } from '../model/manifest.ts';
import { diagnosticAt } from './report.ts';
import { closest } from './suggest.ts';

/** Every reference must name a manifest of the right kind in the same namespace. */
export function checkReferences(refs: Reference[], byAddress: Map<string, Manifest>): Diagnostic[] {
  const namesByKind = new Map<string, Manifest[]>();
  for (const m of byAddress.values()) {
    const list = namesByKind.get(m.kind) ?? [];
    list.push(m);
    namesByKind.set(m.kind, list);
  }
  const diagnostics: Diagnostic[] = [];
  for (const ref of refs) {
    const ns = ref.from.metadata.namespace;
    if (byAddress.has(addressOf(ref.targetKind, ref.targetName, ns))) continue;
    const sameKind = namesByKind.get(ref.targetKind) ?? [];
    const elsewhere = sameKind.filter((m) => m.metadata.name === ref.targetName).map((m) => m.metadata.namespace ?? '');
    if (elsewhere.length > 0) {
      diagnostics.push(
        diagnosticAt(
          ref.from,
          'ref.cross-namespace',
          [...ref.path, 'name'],
          `${ref.targetKind} "${ref.targetName}" exists only in namespace ${elsewhere.map((n) => `"${n}"`).join(', ')}; ` +
            `references stay inside namespace "${ns ?? ''}" (one OpenStack project): declare it here too, or import the OpenStack object by id or filter`,
        ),
      );
      continue;
    }
    const guess = closest(
      ref.targetName,
      sameKind.filter((m) => m.metadata.namespace === ns).map((m) => m.metadata.name),
    );
    diagnostics.push(
      diagnosticAt(
        ref.from,
        'ref.missing',
        [...ref.path, 'name'],
        `no ${ref.targetKind} named "${ref.targetName}" in namespace "${ns ?? ''}"; ${guess ? `did you mean "${guess}"? Otherwise ` : ''}declare it or fix the name`,
      ),
    );
  }
  return diagnostics;
}
