import { compareDiagnostics, type Diagnostic } from '../diagnostic.ts';
import { checkTransition } from '../cloud/transition.ts';
import { specOf, type OpenStackCloudStatus } from '../model/kinds.generated.ts';
import type { Manifest } from '../model/manifest.ts';
import { diagnosticAt } from './report.ts';

/**
 * The rules between two revisions (cloud/transition.ts), positioned in the new one:
 * the OpenStackCloud of `head` against the one of `base` (same name, or the only one),
 * or against the status of the cloud in the cluster. `label` turns a file of `head`
 * into the name the user knows (`HEAD:clouds/cloud.yaml`).
 */
export function checkTransitions(
  base: readonly Manifest[] | undefined,
  head: readonly Manifest[],
  opts: { status?: OpenStackCloudStatus; label?: (file: string) => string } = {},
): Diagnostic[] {
  const clouds = head.filter((m) => m.kind === 'OpenStackCloud');
  const before = (base ?? []).filter((m) => m.kind === 'OpenStackCloud');
  const out: Diagnostic[] = [];
  for (const m of clouds) {
    const match = before.find((b) => b.metadata.name === m.metadata.name) ?? (before.length === 1 ? before[0] : undefined);
    const findings = checkTransition({ spec: match && specOf(match, 'OpenStackCloud'), status: opts.status }, specOf(m, 'OpenStackCloud'));
    for (const f of findings) {
      const d = diagnosticAt(m, f.code, f.path, f.message);
      out.push(opts.label ? { ...d, file: opts.label(d.file) } : d);
    }
  }
  return out.sort(compareDiagnostics);
}
