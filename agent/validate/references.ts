import type { Diagnostic } from '../diagnostic.ts';
import { refsIn, type Reference } from '../graph/references.ts';
import { addressOf, type Manifest } from '../model/manifest.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { diagnosticAt } from './report.ts';
import { closest } from './suggest.ts';

/**
 * Objects that the Syncs a Sync depends on (dependsOn) declare, from what they applied: a
 * reference may name them although this revision does not (Flux: a Kustomization uses what the
 * one it depends on applied).
 */
export interface ProvidedObjects {
  /** Address (`namespace/Kind/name`) → the Sync that declares it. */
  objects: ReadonlyMap<string, string>;
  /** Every Sync depended on, named when a reference finds nothing. */
  syncs: readonly string[];
}

/** Every reference must name a manifest of the right kind in the same namespace, or an object a Sync depended on declares. */
export function checkReferences(refs: Reference[], byAddress: Map<string, Manifest>, provided?: ProvidedObjects): Diagnostic[] {
  const namesByKind = new Map<string, Manifest[]>();
  for (const m of byAddress.values()) {
    const list = namesByKind.get(m.kind) ?? [];
    list.push(m);
    namesByKind.set(m.kind, list);
  }
  const diagnostics: Diagnostic[] = [];
  for (const ref of refs) {
    const ns = ref.from.metadata.namespace;
    const target = addressOf(ref.targetKind, ref.targetName, ns);
    if (byAddress.has(target) || provided?.objects.has(target)) continue;
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
        `no ${ref.targetKind} named "${ref.targetName}" in namespace "${ns ?? ''}"${dependencies(provided)}; ${guess ? `did you mean "${guess}"? Otherwise ` : ''}declare it or fix the name`,
      ),
    );
  }
  return diagnostics;
}

/** The Syncs that were expected to declare a missing object. */
function dependencies(provided: ProvidedObjects | undefined): string {
  if (!provided?.syncs.length) return '';
  const names = provided.syncs.map((s) => `"${s}"`).join(', ');
  return provided.syncs.length === 1
    ? `, and Sync ${names} this one depends on does not declare one`
    : `, and none of the Syncs this one depends on (${names}) declares one`;
}

/** An object a Sync applied, as the API server (or the standalone agent's revision) holds it. */
export interface AppliedObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
}

/**
 * The objects a Sync's new revision would drop that a Sync depending on it still references: one
 * line each, naming the referencing Sync, object and field. Such a revision is held (not applied):
 * pruning the object would take it from under the dependent's (Neutron deletes a network's subnets with it).
 */
export function heldReferences(
  dropped: ReadonlySet<string>,
  dependents: readonly { sync: string; objects: readonly AppliedObject[] }[],
  registry: SchemaRegistry,
): string[] {
  const lines: string[] = [];
  for (const d of dependents)
    for (const o of d.objects)
      for (const r of refsIn(o.kind, o, registry)) {
        const ns = o.metadata.namespace;
        if (!dropped.has(addressOf(r.targetKind, r.targetName, ns))) continue;
        lines.push(
          `${r.targetKind} "${r.targetName}" in namespace "${ns ?? ''}" is still referenced by Sync "${d.sync}" ` +
            `(${o.kind} ${ns ? `${ns}/` : ''}${o.metadata.name} ${r.path.join('.')}): this revision drops it; remove that reference first`,
        );
      }
  return lines;
}
