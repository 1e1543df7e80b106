import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { compareDiagnostics } from '../diagnostic.ts';
import { defaultLimits, type LoadLimits } from '../load/limits.ts';
import { loadTree } from '../load/load.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { PathCheck } from './check-path.ts';
import { resolveCommit, writeRevision } from './git-revision.ts';
import { validateRevision } from './validate.ts';

export interface GitCheck extends PathCheck {
  commit: string;
  /** A loaded file's name as diagnostics show it (`REF:path/file`). */
  label: (file: string) => string;
}

/**
 * Loads and validates `path` as it is in one commit of a local repository,
 * whatever the working tree holds. Diagnostics name files as `REF:path/file`
 * (`origin/main:team-a/net.yaml:4:3`), like `git show` does.
 */
export async function checkGitRevision(
  repoDir: string,
  ref: string,
  path: string,
  registry: SchemaRegistry,
  limits: LoadLimits = defaultLimits,
): Promise<GitCheck> {
  const { commit } = await resolveCommit(repoDir, ref);
  const scratch = await mkdtemp(join(tmpdir(), 'kupenstack-rev-'));
  try {
    const root = await writeRevision(repoDir, commit, path, scratch);
    const prefix = posix.normalize(path.split('\\').join('/')).replace(/^\.\/?|\/$/g, '');
    const single = (await stat(root)).isFile();
    const shown = (file: string): string => `${ref}:${single ? prefix : prefix ? posix.join(prefix, file) : file}`;
    const loaded = await loadTree(root, limits);
    const validated = validateRevision(loaded.documents, registry);
    const diagnostics = [...loaded.diagnostics, ...validated.diagnostics].map((d) => ({ ...d, file: shown(d.file) })).sort(compareDiagnostics);
    return { documents: loaded.documents.length, revision: `${ref}@sha1:${commit}`, commit, validated, diagnostics, label: shown };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
