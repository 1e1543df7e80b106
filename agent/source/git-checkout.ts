import * as fs from 'node:fs';
import { chmod, link, mkdir, symlink, unlink, writeFile } from 'node:fs/promises';
import { isAbsolute, join, posix } from 'node:path';
import git from 'isomorphic-git';
import { linksLeaving } from './links-leaving.ts';
import { SourceError } from './source.ts';

export interface CheckoutResult {
  files: number;
  /** Files hard-linked from the previous checkout instead of written again. */
  linked: number;
  /** Symbolic links that were left out because they point outside the repository. */
  skippedLinks: string[];
}

/** A finished checkout of another commit whose unchanged files can be shared. */
export interface PreviousCheckout {
  commit: string;
  dir: string;
}

interface Entry {
  path: string;
  oid: string;
  mode: string;
  type: 'blob' | 'tree' | 'commit';
}

/** Parallel file writes: the cost of a checkout is mostly waiting for the file system. */
const concurrency = 16;

/**
 * Writes the tree of `commit` from the bare repository `gitdir` into the
 * empty directory `dir`: regular files, executables and symbolic links that
 * stay inside the tree. Links leaving the tree and submodules are not written.
 * Tree entry names are checked, so a hostile server cannot write outside `dir`.
 * Files whose content did not change since `previous` are hard-linked from it
 * (checkouts are never modified after they are made, so sharing is safe).
 */
export async function checkoutTree(
  gitdir: string,
  commit: string,
  dir: string,
  options: { signal?: AbortSignal; previous?: PreviousCheckout } = {},
): Promise<CheckoutResult> {
  // The cache object keeps pack indexes loaded across reads; without it every read reopens the packs.
  const cache = {};
  const entries = await listTree(gitdir, commit, cache, options.signal);
  let before = new Map<string, Entry>();
  if (options.previous) {
    try {
      before = new Map((await listTree(gitdir, options.previous.commit, cache, options.signal)).map((e) => [e.path, e]));
    } catch {
      before = new Map(); // the previous commit is gone from the store: write everything
    }
  }
  const result: CheckoutResult = { files: 0, linked: 0, skippedLinks: [] };
  const links: string[] = [];

  for (const entry of entries) if (entry.type !== 'blob') await mkdir(join(dir, entry.path)); // parents come first (pre-order)

  const writeOne = async (entry: Entry): Promise<void> => {
    const target = join(dir, entry.path);
    if (entry.mode === '120000') {
      const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
      const linkTarget = Buffer.from(blob).toString('utf8');
      if (linkStaysInside(entry.path, linkTarget)) {
        await symlink(linkTarget, target);
        links.push(entry.path);
      } else result.skippedLinks.push(entry.path);
      return;
    }
    const old = before.get(entry.path);
    if (options.previous && old && old.oid === entry.oid && old.mode === entry.mode) {
      try {
        await link(join(options.previous.dir, entry.path), target);
        result.linked++;
        result.files++;
        return;
      } catch {
        // the old file is gone or the file system has no hard links: write it
      }
    }
    const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
    await writeFile(target, blob, { flag: 'wx', mode: entry.mode === '100755' ? 0o755 : 0o644 });
    if (entry.mode === '100755') await chmod(target, 0o755); // the umask may have cut the x bits
    result.files++;
  };

  const blobs = entries.filter((e) => e.type === 'blob');
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < blobs.length) {
      options.signal?.throwIfAborted();
      const entry = blobs[next++];
      if (entry) await writeOne(entry);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, blobs.length) }, worker));

  // Links that really leave (through other links too) go.
  const escaping = await linksLeaving(dir, links);
  for (const rel of escaping) await unlink(join(dir, rel));
  result.skippedLinks.push(...escaping);
  result.skippedLinks.sort();
  return result;
}

/** Every entry of the commit's tree, depth first with folders before their content; names are checked. */
async function listTree(gitdir: string, commit: string, cache: object, signal?: AbortSignal): Promise<Entry[]> {
  const { commit: parsed } = await git.readCommit({ fs, gitdir, oid: commit, cache });
  const out: Entry[] = [];
  const walk = async (treeOid: string, prefix: string): Promise<void> => {
    signal?.throwIfAborted();
    const { tree } = await git.readTree({ fs, gitdir, oid: treeOid, cache });
    for (const entry of tree) {
      if (!safeName(entry.path))
        throw new SourceError('path', `commit ${commit} holds an unsafe file name ${JSON.stringify(`${prefix}${entry.path}`)}; the revision is refused`);
      const path = `${prefix}${entry.path}`;
      out.push({ path, oid: entry.oid, mode: entry.mode, type: entry.type });
      if (entry.type === 'tree') await walk(entry.oid, `${path}/`);
    }
  };
  await walk(parsed.tree, '');
  return out;
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
