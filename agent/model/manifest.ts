import type { SourceDocument } from '../load/document.ts';

export interface ManifestMetadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A document that passed its kind's schema: the unit the graph, planner and engine work on. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: ManifestMetadata;
  spec: Record<string, unknown>;
  source: SourceDocument;
  /** `namespace/Kind/name`, or `Kind/name` for cluster-scoped kinds: the identity used everywhere. */
  address: string;
}

export function addressOf(kind: string, name: string, namespace?: string): string {
  return namespace ? `${namespace}/${kind}/${name}` : `${kind}/${name}`;
}
