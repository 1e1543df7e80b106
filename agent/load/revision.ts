import { createHash } from 'node:crypto';
import { stableJson } from '../ownership/marker.ts';
import type { SourceDocument } from '../model/manifest.ts';
import { readManifestFiles } from './files.ts';
import { defaultLimits, type LoadLimits } from './limits.ts';

/** A local folder's revision: the hash of its manifests' content, so an unchanged tree has the same revision. */
export function contentRevision(documents: SourceDocument[]): string {
  const hash = createHash('sha256');
  for (const d of [...documents].sort((a, b) => (a.file === b.file ? a.index - b.index : a.file < b.file ? -1 : 1)))
    hash.update(`${d.file}#${d.index}\n${stableJson(d.value)}\n`);
  return `sha256:${hash.digest('hex').slice(0, 16)}`;
}

/**
 * The directory source's revision, before anything is parsed: `sha256:<16 hex>`
 * over the manifest files (path and content) and the files the loader refuses
 * (path and reason). It uses the loader's own file selection, so a hidden or
 * ignored file never changes it.
 */
export async function directoryRevision(dir: string, limits: LoadLimits = defaultLimits): Promise<string> {
  const { files, diagnostics } = await readManifestFiles(dir, limits);
  const hash = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))) hash.update(`${f.file}\0${f.text.length}\0${f.text}\0`);
  for (const d of diagnostics) hash.update(`!${d.file}\0${d.code}\0`);
  return `sha256:${hash.digest('hex').slice(0, 16)}`;
}
