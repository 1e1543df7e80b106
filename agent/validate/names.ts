import type { Diagnostic } from '../diagnostic.ts';
import { where, type Manifest } from '../model/manifest.ts';
import { diagnosticAt } from './report.ts';

/** A name is unique per kind and namespace, as in Kubernetes; the first declaration wins, later ones are errors. */
export function checkUniqueNames(manifests: Manifest[]): { unique: Manifest[]; diagnostics: Diagnostic[] } {
  const first = new Map<string, Manifest>();
  const diagnostics: Diagnostic[] = [];
  for (const m of manifests) {
    const seen = first.get(m.address);
    if (seen) {
      diagnostics.push(
        diagnosticAt(
          m,
          'name.duplicate',
          ['metadata', 'name'],
          `${m.kind} "${m.metadata.name}" is already declared${m.metadata.namespace ? ` in namespace "${m.metadata.namespace}"` : ''} at ${where(seen)}; rename one of them or delete the copy`,
        ),
      );
    } else {
      first.set(m.address, m);
    }
  }
  return { unique: [...first.values()], diagnostics };
}
