import { posix, relative, sep } from 'node:path';

/**
 * A file as the repository names it (`tenants/team-b/bad.yaml`), from where the
 * agent read it (its private copy of the revision): users fix files in their
 * repository, never in the agent's state dir. `sourcePath` is the Sync's
 * `path`, relative to the repository root (`./` = the root).
 */
export function repoPath(file: string, copyDir: string, sourcePath: string): string {
  const inside = relative(copyDir, file);
  if (inside.startsWith('..') || inside === file) return file;
  const base = posix
    .normalize(sourcePath.replaceAll('\\', '/'))
    .replace(/^\.\/?$/, '')
    .replace(/\/+$/, '');
  const rel = inside.split(sep).join('/');
  return base ? posix.join(base, rel) : rel;
}
