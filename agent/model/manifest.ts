/**
 * One manifest as found in a file: its parsed value and what is needed to
 * point back into the text. The loader makes them (load/document.ts); the
 * model owns the shape so that nothing downstream needs the loader.
 */
export interface SourceDocument {
  /** Path relative to the loaded root, with forward slashes. */
  file: string;
  /** 0-based index of the document inside a multi-document file. */
  index: number;
  value: unknown;
  /** Character offset → position; resolved lazily because positions are only needed for errors. */
  position: (path: readonly (string | number)[], at?: 'key' | 'value') => Position;
}

export interface Position {
  line: number;
  column: number;
}

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

/** `file:line` of a manifest (its name), or of the field at `path` inside it: how errors point into the revision. */
export function where(m: Manifest, path: readonly (string | number)[] = ['metadata', 'name']): string {
  return `${m.source.file}:${m.source.position(path, 'key').line}`;
}
