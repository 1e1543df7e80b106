import type { Diagnostic } from '../diagnostic.ts';
import type { KindRules } from '../kinds/kit/rule.ts';
import { kindRules } from '../kinds/registry.ts';
import { addressOf, type Manifest } from '../model/manifest.ts';
import { diagnosticAt } from './report.ts';

/** Runs every kind's own rules over the manifests of that kind and positions what they find. */
export function checkKindRules(manifests: Manifest[], byAddress: Map<string, Manifest>, rules: readonly KindRules[] = kindRules): Diagnostic[] {
  const byKind = new Map<string, Manifest[]>();
  for (const m of manifests) {
    const list = byKind.get(m.kind);
    if (list) list.push(m);
    else byKind.set(m.kind, [m]);
  }
  const revision = { find: (kind: string, name: string, namespace: string | undefined) => byAddress.get(addressOf(kind, name, namespace)) };
  const out: Diagnostic[] = [];
  for (const rule of rules) {
    const ofKind = byKind.get(rule.kind);
    if (!ofKind) continue;
    for (const f of rule.check(ofKind, revision)) out.push(diagnosticAt(f.manifest, f.code, f.path, f.message));
  }
  return out;
}
