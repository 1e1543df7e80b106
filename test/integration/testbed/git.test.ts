import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { afterAll, describe, expect, it } from 'vitest';
import { peers } from '../../support/peers.ts';

const testbed = join(dirname(fileURLToPath(import.meta.url)), '../../testbed');
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('the test-bed Git server', () => {
  it('accepts a push from the git CLI and serves it to isomorphic-git', async () => {
    const repo = `smoke-${Date.now()}`;
    execFileSync('bash', [join(testbed, 'git/new-repo.sh'), repo]);
    const { url, user, password } = peers.git;
    const remote = `${url}/${repo}.git`;

    const work = await mkdtemp(join(tmpdir(), 'ks-git-'));
    dirs.push(work);
    const gitCli = (...args: string[]): string =>
      execFileSync('git', ['-c', 'user.name=Smoke', '-c', 'user.email=smoke@example.invalid', '-c', 'credential.helper=', ...args], { cwd: work, encoding: 'utf8', env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
    gitCli('init', '-q', '-b', 'main');
    await writeFile(join(work, 'network.yaml'), 'kind: Network\n');
    gitCli('add', '.');
    gitCli('commit', '-q', '-m', 'first');
    const pushed = gitCli('rev-parse', 'HEAD').trim();
    gitCli('push', '-q', remote.replace('http://', `http://${user}:${password}@`), 'main');

    const clone = await mkdtemp(join(tmpdir(), 'ks-iso-'));
    dirs.push(clone);
    await git.clone({ fs, http, dir: clone, url: remote, ref: 'main', singleBranch: true, depth: 1, onAuth: () => ({ username: user, password }) });
    expect(await git.resolveRef({ fs, dir: clone, ref: 'HEAD' })).toBe(pushed);
    expect(await readFile(join(clone, 'network.yaml'), 'utf8')).toBe('kind: Network\n');

    // Without credentials the server refuses.
    await expect(git.getRemoteInfo({ http, url: remote })).rejects.toThrow(/401/);
  });
});
