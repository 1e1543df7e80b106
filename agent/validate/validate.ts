import { compareDiagnostics, type Diagnostic } from '../diagnostic.ts';
import { dependencyEdges } from '../graph/edges.ts';
import { buildGraph, createOrder, findCycles, type DependencyGraph } from '../graph/graph.ts';
import { referencesOf, type Reference } from '../graph/references.ts';
import type { Manifest, SourceDocument } from '../model/manifest.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { checkConsistency } from './consistency.ts';
import { checkKindRules } from './kind-rules.ts';
import { checkUniqueNames } from './names.ts';
import { checkReferences, type ProvidedObjects } from './references.ts';
import { diagnosticAt } from './report.ts';
import { checkDocument } from './schema-check.ts';

/** The desired state of one revision, ready for planning — or every reason it is not. */
export interface ValidatedRevision {
  manifests: Manifest[];
  references: Reference[];
  graph: DependencyGraph;
  /** Addresses, dependencies first. */
  order: string[];
  diagnostics: Diagnostic[];
}

/**
 * Schema first, then the rules that need the whole revision: unique names,
 * references, each kind's own rules (kinds/<kind>/rules.ts) and cycles. All
 * errors are collected; a revision with any error must not be applied at all.
 * `provided`: objects the Syncs this revision's Sync depends on declare (references may name them).
 */
export function validateRevision(documents: SourceDocument[], registry: SchemaRegistry, provided?: ProvidedObjects): ValidatedRevision {
  const diagnostics: Diagnostic[] = [];
  const valid: Manifest[] = [];
  for (const doc of documents) {
    const checked = checkDocument(doc, registry);
    diagnostics.push(...checked.diagnostics);
    if (checked.manifest) valid.push(checked.manifest);
  }
  const { unique, diagnostics: nameProblems } = checkUniqueNames(valid);
  diagnostics.push(...nameProblems);

  const byAddress = new Map(unique.map((m) => [m.address, m]));
  const references = unique.flatMap((m) => referencesOf(m, registry));
  diagnostics.push(...checkReferences(references, byAddress, provided));
  diagnostics.push(...checkConsistency(unique));
  diagnostics.push(...checkKindRules(unique, byAddress));

  // The graph is a step of validation: a revision whose references form a cycle is invalid.
  const graph = buildGraph(unique, dependencyEdges(unique, references, registry));
  for (const cycle of findCycles(graph)) {
    const first = byAddress.get(cycle[0]!)!;
    diagnostics.push(diagnosticAt(first, 'graph.cycle', ['metadata', 'name'], `dependency cycle: ${cycle.join(' → ')}; remove one of these references`));
  }
  diagnostics.sort(compareDiagnostics);
  const order = diagnostics.length === 0 ? createOrder(graph) : [];
  return { manifests: unique, references, graph, order, diagnostics };
}
