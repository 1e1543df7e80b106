import { stat } from 'node:fs/promises';
import { dirname, posix, sep } from 'node:path';
import { compareDiagnostics, type Diagnostic } from '../diagnostic.ts';
import { loadTree } from '../load/load.ts';
import { contentRevision } from '../load/revision.ts';
import { defaultLimits, type LoadLimits } from '../load/limits.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { ProvidedObjects } from './references.ts';
import { validateRevision, type ValidatedRevision } from './validate.ts';

export interface PathCheck {
  documents: number;
  /** Content hash of the loaded manifests. */
  revision: string;
  validated: ValidatedRevision;
  diagnostics: Diagnostic[];
  /** A loaded file's name as diagnostics show it. */
  label: (file: string) => string;
}

/**
 * Loads and validates a folder or a file on disk. File names in diagnostics
 * are given as the user wrote the path (`repo/tenants/a.yaml`), so editors and
 * terminals can jump to them. `provided`: what the Syncs a Sync depends on declare.
 */
export async function checkPath(path: string, registry: SchemaRegistry, limits: LoadLimits = defaultLimits, provided?: ProvidedObjects): Promise<PathCheck> {
  const isDir = (await stat(path)).isDirectory();
  const prefix = (isDir ? path : dirname(path)).split(sep).join('/');
  const shown = (file: string): string => (prefix === '.' ? file : posix.join(prefix, file));
  const loaded = await loadTree(path, limits);
  const validated = validateRevision(loaded.documents, registry, provided);
  const diagnostics = [...loaded.diagnostics, ...validated.diagnostics].map((d) => ({ ...d, file: shown(d.file) })).sort(compareDiagnostics);
  return { documents: loaded.documents.length, revision: contentRevision(loaded.documents), validated, diagnostics, label: shown };
}
