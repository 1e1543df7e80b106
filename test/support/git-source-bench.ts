import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GitCredentials } from '../../agent/source/credentials.ts';
import { GitSource } from '../../agent/source/git.ts';
import type { BenchRow } from '../bench/table.ts';
import { TestRepo } from './git-remote.ts';
import { peers } from './peers.ts';

/**
 * The Git source against the git CLI on the test bed's server, for
 * `npm run bench` (register `gitSource: benchGitSource` in test/bench/run.ts).
 * A repository of `files` manifests; median of three runs each:
 * cold shallow fetch + checkout, unchanged fetch (warm cache), and fetch of
 * a one-file change.
 */
export async function benchGitSource(files = 2_000): Promise<BenchRow[]> {
  const repo = await TestRepo.create('bench-src');
  const scratch = await mkdtemp(join(tmpdir(), 'ks-bench-git-'));
  try {
    const content: Record<string, string> = {};
    for (let i = 0; i < files; i++) content[`ns-${i % 20}/vm-${i}.yaml`] = `apiVersion: kupenstack.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: vm-${i}, namespace: ns-${i % 20}}\nspec:\n  flavorRef: {name: small}\n  imageRef: {name: cirros}\n  networks: [{networkRef: {name: net-${i % 7}}}]\n`;
    await repo.commit(content, 'many manifests');
    repo.push();
    const credentials = new GitCredentials(peers.git.user, peers.git.password);
    const auth = `Authorization: Basic ${Buffer.from(`${peers.git.user}:${peers.git.password}`).toString('base64')}`;
    const cli = (cwd: string, ...args: string[]): void => {
      execFileSync('git', ['-c', 'credential.helper=', '-c', `http.extraHeader=${auth}`, ...args], { cwd, stdio: 'ignore', env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
    };
    const time = async (run: () => Promise<void> | void): Promise<number> => {
      const t0 = performance.now();
      await run();
      return performance.now() - t0;
    };
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

    const cold: number[] = [];
    const coldCli: number[] = [];
    const warm: number[] = [];
    const warmCli: number[] = [];
    const change: number[] = [];
    const changeCli: number[] = [];
    for (let run = 0; run < 3; run++) {
      const cacheDir = join(scratch, `cache-${run}`);
      const clone = join(scratch, `clone-${run}`);
      const src = new GitSource({ url: repo.url, ref: { branch: 'main' }, credentials, cacheDir });
      cold.push(await time(() => src.fetch().then(() => undefined)));
      coldCli.push(await time(() => cli(scratch, 'clone', '-q', '--depth', '1', '--single-branch', '--branch', 'main', repo.url, clone)));
      warm.push(await time(() => new GitSource({ url: repo.url, ref: { branch: 'main' }, credentials, cacheDir }).fetch().then(() => undefined)));
      warmCli.push(await time(() => cli(clone, 'fetch', '-q', '--depth', '1', 'origin', 'main')));
      await repo.commit({ [`ns-0/vm-${run}.yaml`]: `changed: ${run}\n` }, `change ${run}`);
      repo.push();
      change.push(await time(() => src.fetch().then(() => undefined)));
      changeCli.push(await time(() => {
        cli(clone, 'fetch', '-q', '--depth', '1', 'origin', 'main');
        cli(clone, 'checkout', '-q', '--detach', 'FETCH_HEAD');
      }));
    }
    const ms = (x: number): string => `${x.toFixed(0)} ms`;
    // Time ratio against git's CLI: at most 1.5× its time (our fetch is pure JS; git is C).
    const verdict = (ours: number, peer: number): { goal: string; met: boolean } => ({ goal: `≤ 1.5× git's time`, met: ours <= peer * 1.5 });
    return [
      { name: `git source: cold fetch + checkout (${files} files)`, ours: ms(median(cold)), peer: `git clone --depth 1: ${ms(median(coldCli))}`, ...verdict(median(cold), median(coldCli)) },
      { name: 'git source: unchanged branch (restart, warm cache)', ours: ms(median(warm)), peer: `git fetch --depth 1: ${ms(median(warmCli))}`, ...verdict(median(warm), median(warmCli)) },
      { name: 'git source: one-file change', ours: ms(median(change)), peer: `git fetch --depth 1 + checkout: ${ms(median(changeCli))}`, ...verdict(median(change), median(changeCli)) },
    ];
  } finally {
    await rm(scratch, { recursive: true, force: true });
    await repo.dispose();
  }
}
