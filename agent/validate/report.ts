import type { Diagnostic } from '../diagnostic.ts';
import type { Manifest } from '../model/manifest.ts';
import { formatPath } from './json-path.ts';

/** A diagnostic about a valid manifest, positioned at `path` inside it. */
export function diagnosticAt(m: Manifest, code: string, path: (string | number)[], message: string, at: 'key' | 'value' = 'value'): Diagnostic {
  const { line, column } = m.source.position(path, at);
  return { code, file: m.source.file, line, column, kind: m.kind, name: m.metadata.name, path: formatPath(path), message };
}
