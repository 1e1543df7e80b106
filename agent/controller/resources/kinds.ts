import type { SchemaRegistry } from '../../schema/registry.ts';

export interface WatchedKind {
  kind: string;
  plural: string;
  /** Top-level status fields the CRD declares (besides the common ones): where per-kind observations go. */
  statusFields: Set<string>;
}

/** The namespaced kinds the controller reconciles, read from the schemas (never a list of its own). */
export function namespacedKinds(registry: SchemaRegistry): WatchedKind[] {
  return [...registry.kinds.values()]
    .filter((k) => k.scope === 'Namespaced')
    .map((k) => {
      const status = (k.schema.properties as Record<string, { properties?: Record<string, unknown> }> | undefined)?.status;
      return { kind: k.kind, plural: k.plural, statusFields: new Set(Object.keys(status?.properties ?? {})) };
    });
}
