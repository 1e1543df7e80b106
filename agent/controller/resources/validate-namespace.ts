import type { Diagnostic } from '../../diagnostic.ts';
import type { SourceDocument } from '../../model/manifest.ts';
import type { SchemaRegistry } from '../../schema/registry.ts';
import { validateRevision, type ValidatedRevision } from '../../validate/validate.ts';

export interface NamespaceValidation {
  /** The valid objects, as one revision the engine can apply. */
  validated: ValidatedRevision;
  /** Address → what `kupenstack validate` says about it; these objects are left out. */
  rejected: Map<string, Diagnostic[]>;
}

/**
 * Git applies a revision whole or not at all; objects made with kubectl come
 * one by one, so one bad object must not stop its neighbours. The invalid
 * ones are set aside and the rest validated again, until what is left is
 * clean (an object that references a rejected one is rejected in turn).
 */
export function validateNamespace(documents: SourceDocument[], registry: SchemaRegistry): NamespaceValidation {
  const rejected = new Map<string, Diagnostic[]>();
  let remaining = documents;
  for (;;) {
    const validated = validateRevision(remaining, registry);
    if (validated.diagnostics.length === 0) return { validated, rejected };
    for (const d of validated.diagnostics) rejected.set(d.file, [...(rejected.get(d.file) ?? []), d]);
    const next = remaining.filter((doc) => !rejected.has(doc.file));
    // A diagnostic that names no remaining document cannot be resolved by removing one: stop with nothing applied.
    if (next.length === remaining.length) return { validated: { ...validated, manifests: [], order: [] }, rejected };
    remaining = next;
  }
}
