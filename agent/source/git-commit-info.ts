import * as fs from 'node:fs';
import git from 'isomorphic-git';
import { cacheLayout } from './git-cache.ts';
import { redactUrl } from './git-url.ts';

/** A commit as a person reads it: the first line of its message, its author and when it was made. */
export interface CommitInfo {
  message: string;
  author: string;
  when: string;
}

/**
 * The commit behind a Git revision, read from the Sync's local Git cache
 * (`<cacheDir>/<hash of the URL>/repo.git`, git-cache.ts): no fetch, no
 * network. Undefined when the cache does not hold it (another replica
 * fetched it, or the cache was emptied).
 */
export async function commitInfo(cacheDir: string, url: string, commit: string): Promise<CommitInfo | undefined> {
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(commit)) return undefined;
  const { gitdir } = cacheLayout(cacheDir, redactUrl(url), '');
  try {
    const { commit: c } = await git.readCommit({ fs, gitdir, oid: commit });
    return {
      message: c.message.split('\n')[0]!.trim(),
      author: c.author.name,
      when: new Date(c.author.timestamp * 1000).toISOString(),
    };
  } catch {
    return undefined;
  }
}
