import { stat } from 'node:fs/promises';
import { dirname, posix, sep } from 'node:path';
import { compareDiagnostics, type Diagnostic } from '../diagnostic.ts';
import { loadTree } from '../load/load.ts';
import { defaultLimits, type LoadLimits } from '../load/limits.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { validateRevision, type ValidatedRevision } from './validate.ts';

export interface PathCheck {
  documents: number;
  revision: ValidatedRevision;
  diagnostics: Diagnostic[];
}

/**
 * Loads and validates a folder or a file on disk. File names in diagnostics
 * are given as the user wrote the path (`repo/tenants/a.yaml`), so editors and
 * terminals can jump to them.
 */
export async function checkPath(path: string, registry: SchemaRegistry, limits: LoadLimits = defaultLimits): Promise<PathCheck> {
  const isDir = (await stat(path)).isDirectory();
  const prefix = (isDir ? path : dirname(path)).split(sep).join('/');
  const shown = (file: string): string => (prefix === '.' ? file : posix.join(prefix, file));
  const loaded = await loadTree(path, limits);
  const revision = validateRevision(loaded.documents, registry);
  const diagnostics = [...loaded.diagnostics, ...revision.diagnostics].map((d) => ({ ...d, file: shown(d.file) })).sort(compareDiagnostics);
  return { documents: loaded.documents.length, revision, diagnostics };
}
