import { createHash } from 'node:crypto';
import { cp, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathExists } from '../util/fs.ts';

/**
 * Private copies of fetched revisions. A Source may reuse its checkout for
 * the next revision, but drift correction must re-apply the last *good*
 * revision even after a bad one was fetched (and after a restart), so the
 * manifests of a revision are copied out before they are validated.
 */
export class Snapshots {
  private readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  dirOf(revision: string): string {
    return join(this.root, createHash('sha256').update(revision).digest('hex').slice(0, 24));
  }

  /** Copies `dir` once per revision (a copy cut by a crash is never used: it is renamed into place when complete). */
  async take(revision: string, dir: string): Promise<string> {
    const target = this.dirOf(revision);
    if (await pathExists(target)) return target;
    const tmp = `${target}.${process.pid}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    await cp(dir, tmp, { recursive: true, filter: (src) => !src.split(/[\\/]/).includes('.git') });
    await rename(tmp, target);
    return target;
  }

  /** Deletes every copy except those given (the last good and the newest). */
  async keepOnly(keep: (string | undefined)[]): Promise<void> {
    const wanted = new Set(keep.filter((k): k is string => k !== undefined));
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(this.root, name);
      if (!wanted.has(path)) await rm(path, { recursive: true, force: true });
    }
  }
}
