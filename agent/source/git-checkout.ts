import * as fs from 'node:fs';
import { chmod, mkdir, realpath, symlink, unlink, writeFile } from 'node:fs/promises';
import { isAbsolute, join, posix, sep } from 'node:path';
import git from 'isomorphic-git';
import { SourceError } from './source.ts';

export interface CheckoutResult {
  files: number;
  /** Symbolic links that were left out because they point outside the repository. */
  skippedLinks: string[];
}

/**
 * Writes the tree of `commit` from the bare repository `gitdir` into the
 * empty directory `dir`: regular files, executables and symbolic links that
 * stay inside the tree. Links leaving the tree and submodules are not written.
 * Tree entry names are checked, so a hostile server cannot write outside `dir`.
 */
export async function checkoutTree(gitdir: string, commit: string, dir: string, signal?: AbortSignal): Promise<CheckoutResult> {
  // The cache object keeps pack indexes loaded across reads; without it every read reopens the packs.
  const cache = {};
  const { commit: parsed } = await git.readCommit({ fs, gitdir, oid: commit, cache });
  const result: CheckoutResult = { files: 0, skippedLinks: [] };
  const links: string[] = [];

  const walk = async (treeOid: string, rel: string): Promise<void> => {
    signal?.throwIfAborted();
    const { tree } = await git.readTree({ fs, gitdir, oid: treeOid, cache });
    for (const entry of tree) {
      if (!safeName(entry.path)) throw new SourceError('path', `commit ${commit} holds an unsafe file name ${JSON.stringify(`${rel}${entry.path}`)}; the revision is refused`);
      const relPath = `${rel}${entry.path}`;
      const target = join(dir, relPath);
      if (entry.type === 'tree') {
        await mkdir(target);
        await walk(entry.oid, `${relPath}/`);
      } else if (entry.type === 'commit') {
        await mkdir(target); // a submodule: its content is another repository
      } else if (entry.mode === '120000') {
        const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
        const link = Buffer.from(blob).toString('utf8');
        if (linkStaysInside(relPath, link)) {
          await symlink(link, target);
          links.push(relPath);
        } else result.skippedLinks.push(relPath);
      } else {
        const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
        await writeFile(target, blob, { flag: 'wx' });
        if (entry.mode === '100755') await chmod(target, 0o755);
        result.files++;
      }
    }
  };
  await walk(parsed.tree, '');
  // The textual check above cannot see links through other links (`a -> .`,
  // `b -> a/../x`); the file system can. Links that really leave go.
  const root = await realpath(dir);
  const escaping: string[] = [];
  for (const rel of links) {
    let real: string;
    try {
      real = await realpath(join(dir, rel));
    } catch {
      continue; // dangling: points nowhere, so nowhere outside
    }
    if (real !== root && !real.startsWith(root + sep)) escaping.push(rel);
  }
  for (const rel of escaping) await unlink(join(dir, rel));
  result.skippedLinks.push(...escaping);
  return result;
}

function safeName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\') && !name.includes('\0') && name.toLowerCase() !== '.git';
}

/** Whether a link at `relPath` (forward slashes, inside the tree) with target `link` resolves inside the tree. */
export function linkStaysInside(relPath: string, link: string): boolean {
  if (link === '' || isAbsolute(link) || link.startsWith('/') || link.includes('\0')) return false;
  const resolved = posix.normalize(posix.join(posix.dirname(relPath), link));
  return resolved !== '..' && !resolved.startsWith('../') && !posix.isAbsolute(resolved);
}
