import { createHash } from 'node:crypto';
import { stableJson } from '../ownership/marker.ts';
import type { SourceDocument } from './document.ts';

/** A local folder's revision: the hash of its manifests' content, so an unchanged tree has the same revision. */
export function contentRevision(documents: SourceDocument[]): string {
  const hash = createHash('sha256');
  for (const d of [...documents].sort((a, b) => (a.file === b.file ? a.index - b.index : a.file < b.file ? -1 : 1))) hash.update(`${d.file}#${d.index}\n${stableJson(d.value)}\n`);
  return `sha256:${hash.digest('hex').slice(0, 16)}`;
}
