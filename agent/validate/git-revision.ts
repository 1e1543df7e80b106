import * as fs from 'node:fs';
import { join, posix, resolve } from 'node:path';
import git from 'isomorphic-git';
import { KupenstackError } from '../errors.ts';
import { checkoutTree } from '../source/git-checkout.ts';

/**
 * One revision of a local Git repository, written out as plain files so the
 * loader reads it exactly as it reads a folder (same limits, ignore file and
 * symlink checks). Used by `plan --base`, which must not depend on what is
 * checked out in the working tree.
 */

export class GitRevisionError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('git.revision', message, options);
  }
}

export interface GitRevision {
  /** The name the user gave (`origin/main`, a SHA, `HEAD`). */
  ref: string;
  commit: string;
}

/** The Git directory of a work tree (`.git` may be a file in worktrees and submodules: `gitdir: …`). */
function gitdirOf(repoDir: string): string {
  const dotGit = join(repoDir, '.git');
  try {
    const info = fs.statSync(dotGit);
    if (info.isDirectory()) return dotGit;
    const text = fs.readFileSync(dotGit, 'utf8').trim();
    const m = /^gitdir:\s*(.+)$/m.exec(text);
    if (m) return resolve(repoDir, m[1]!.trim());
  } catch {
    // A bare repository: the directory itself.
    if (fs.existsSync(join(repoDir, 'HEAD')) && fs.existsSync(join(repoDir, 'objects'))) return repoDir;
  }
  throw new GitRevisionError(`${repoDir} is not a Git repository; give --repo the folder that holds .git`);
}

/** Resolves a branch, tag, remote-tracking ref, `HEAD` or a (short) SHA, with `~N`/`^N` suffixes, to a commit. */
export async function resolveCommit(repoDir: string, ref: string): Promise<GitRevision> {
  const m = /^(.*?)((?:[~^]\d*)+)$/.exec(ref);
  if (!m || m[1] === '') return resolvePlain(repoDir, ref);
  const gitdir = gitdirOf(repoDir);
  let { commit } = await resolvePlain(repoDir, m[1]!);
  for (const step of m[2]!.match(/[~^]\d*/g) ?? []) {
    const n = step.length > 1 ? Number(step.slice(1)) : 1;
    // `~N` walks N first parents; `^N` takes the N-th parent (`^0` is the commit itself).
    const hops = step[0] === '~' ? Array.from({ length: n }, () => 0) : n === 0 ? [] : [n - 1];
    for (const parentIndex of hops) {
      const { commit: c } = await git.readCommit({ fs, dir: repoDir, gitdir, oid: commit });
      const parent = c.parent[parentIndex];
      if (!parent)
        throw new GitRevisionError(
          `"${ref}": commit ${commit.slice(0, 12)} has no such parent in ${repoDir} (a shallow clone stops early: fetch more history)`,
        );
      commit = parent;
    }
  }
  return { ref, commit };
}

async function resolvePlain(repoDir: string, ref: string): Promise<GitRevision> {
  const gitdir = gitdirOf(repoDir);
  let oid: string | undefined;
  try {
    oid = await git.resolveRef({ fs, dir: repoDir, gitdir, ref });
  } catch {
    if (/^[0-9a-f]{4,64}$/i.test(ref)) {
      try {
        oid = await git.expandOid({ fs, dir: repoDir, gitdir, oid: ref.toLowerCase() });
      } catch {
        // Reported below with the fix.
      }
    }
  }
  if (!oid)
    throw new GitRevisionError(
      `"${ref}" is not a branch, tag or commit of ${repoDir}; fetch it first (a shallow CI checkout needs fetch-depth that reaches the base, e.g. 2 for a pull request merge commit)`,
    );
  try {
    // Tags point at tag objects; peel to the commit.
    const { commit } = await git.readCommit({ fs, dir: repoDir, gitdir, oid }).then((c) => ({ commit: c.oid }));
    return { ref, commit };
  } catch (err) {
    try {
      const tag = await git.readTag({ fs, dir: repoDir, gitdir, oid });
      return { ref, commit: tag.tag.object };
    } catch {
      throw new GitRevisionError(`"${ref}" (${oid}) is not a commit that is present in ${repoDir}; fetch it first`, { cause: err });
    }
  }
}

/**
 * Writes `commit` into the empty folder `into` exactly as the agent's Git
 * source checks it out (same name checks, links leaving the tree left out),
 * so a plan sees what the agent would apply. Returns the folder to load:
 * `subpath` inside it (the repository root when empty).
 */
export async function writeRevision(repoDir: string, commit: string, subpath: string, into: string): Promise<string> {
  const prefix = posix.normalize(subpath.split('\\').join('/')).replace(/^\.\/?|\/$/g, '');
  if (prefix === '..' || prefix.startsWith('../') || posix.isAbsolute(prefix))
    throw new GitRevisionError(`path "${subpath}" leaves the repository; give a path inside it`);
  await checkoutTree(gitdirOf(repoDir), commit, into);
  const root = prefix === '' ? into : join(into, prefix);
  if (!fs.existsSync(root)) throw new GitRevisionError(`path "${subpath}" does not exist in commit ${commit.slice(0, 12)}`);
  return root;
}
