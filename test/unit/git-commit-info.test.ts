import * as fs from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { describe, expect, it } from 'vitest';
import { cacheLayout } from '../../agent/source/git-cache.ts';
import { commitInfo } from '../../agent/source/git-commit-info.ts';

// The web view names an applied revision's commit (message, author, when) from the Sync's local Git cache.
describe('commitInfo', () => {
  it("reads the commit from the cache's repository of that URL (credentials in the URL do not matter), and nothing for an unknown commit", async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'ks-commit-info-'));
    const { gitdir } = cacheLayout(cacheDir, 'https://git.example/infra.git', '');
    const dir = mkdtempSync(join(tmpdir(), 'ks-commit-work-'));
    await git.init({ fs, dir, gitdir, defaultBranch: 'main' });
    fs.writeFileSync(join(dir, 'a.yaml'), 'a: 1\n');
    await git.add({ fs, dir, gitdir, filepath: 'a.yaml' });
    const oid = await git.commit({ fs, dir, gitdir, message: 'team-a: extra-net\n\nbody', author: { name: 'Ada', email: 'ada@example.org', timestamp: 1767225600, timezoneOffset: 0 } });
    expect(await commitInfo(cacheDir, 'https://user:pw@git.example/infra.git', oid)).toEqual({ message: 'team-a: extra-net', author: 'Ada', when: '2026-01-01T00:00:00.000Z' });
    expect(await commitInfo(cacheDir, 'https://git.example/infra.git', 'f'.repeat(40))).toBeUndefined();
    expect(await commitInfo(cacheDir, 'https://git.example/infra.git', '../../etc')).toBeUndefined();
  });
});
