import { compareDiagnostics, type Diagnostic } from '../diagnostic.ts';
import type { SourceDocument } from '../model/manifest.ts';
import { readManifestFiles } from './files.ts';
import { defaultLimits, type LoadLimits } from './limits.ts';
import { parseManifestFile } from './parse.ts';

export interface LoadResult {
  documents: SourceDocument[];
  diagnostics: Diagnostic[];
}

/** Reads and parses every manifest under `root` (a folder or one file). */
export async function loadTree(root: string, limits: LoadLimits = defaultLimits): Promise<LoadResult> {
  const read = await readManifestFiles(root, limits);
  const documents: SourceDocument[] = [];
  const diagnostics = [...read.diagnostics];
  for (const file of read.files) {
    const parsed = parseManifestFile(file);
    documents.push(...parsed.documents);
    diagnostics.push(...parsed.diagnostics);
  }
  diagnostics.sort(compareDiagnostics);
  return { documents, diagnostics };
}
