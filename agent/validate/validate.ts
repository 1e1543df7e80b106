import { compareDiagnostics, type Diagnostic } from '../diagnostic.ts';
import { buildGraph, createOrder, findCycles, type DependencyGraph } from '../graph/graph.ts';
import { referencesOf, type Reference } from '../graph/references.ts';
import type { SourceDocument } from '../load/document.ts';
import type { Manifest } from '../model/manifest.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { checkConsistency } from './consistency.ts';
import { checkNetworkRules } from './network-rules.ts';
import { checkUniqueNames } from './names.ts';
import { checkReferences } from './references.ts';
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
 * references, cycles and network arithmetic. All errors are collected; a
 * revision with any error must not be applied at all.
 */
export function validateRevision(documents: SourceDocument[], registry: SchemaRegistry): ValidatedRevision {
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
  diagnostics.push(...checkReferences(references, byAddress));
  diagnostics.push(...checkNetworkRules(unique, byAddress));
  diagnostics.push(...checkConsistency(unique));

  const edges = references
    .filter((r) => !r.weak)
    .map((r) => ({ from: r.from.address, to: `${r.from.metadata.namespace ? `${r.from.metadata.namespace}/` : ''}${r.targetKind}/${r.targetName}` }));
  // Ordering without a reference: every manifest of a kind listed in x-kupenstack-after, same namespace
  // (a port needs the subnets of its network before it can get an address).
  const byNamespaceKind = new Map<string, Manifest[]>();
  for (const m of unique) {
    const key = `${m.metadata.namespace ?? ''}/${m.kind}`;
    const list = byNamespaceKind.get(key);
    if (list) list.push(m);
    else byNamespaceKind.set(key, [m]);
  }
  for (const m of unique) {
    for (const kind of registry.kinds.get(m.kind)?.after ?? []) {
      for (const other of byNamespaceKind.get(`${m.metadata.namespace ?? ''}/${kind}`) ?? []) edges.push({ from: m.address, to: other.address });
    }
  }
  const graph = buildGraph(unique, edges);
  for (const cycle of findCycles(graph)) {
    const first = byAddress.get(cycle[0]!)!;
    diagnostics.push(diagnosticAt(first, 'graph.cycle', ['metadata', 'name'], `dependency cycle: ${cycle.join(' → ')}; remove one of these references`));
  }
  diagnostics.sort(compareDiagnostics);
  const order = diagnostics.length === 0 ? createOrder(graph) : [];
  return { manifests: unique, references, graph, order, diagnostics };
}
