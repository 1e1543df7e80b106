import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * The plan steps of repo-template's CI files, run as written by bash with the
 * real CLI on a real Git history (a pull request merged into its base), with
 * no OpenStack credentials: what a fork's pull request gets.
 */

const root = join(import.meta.dirname, '../..');
let work = '';
let repo = '';
let bin = '';

const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=ci@kupenstack.invalid', '-c', 'user.name=ci', ...args], { cwd: repo, encoding: 'utf8' }).trim();

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'ks-ci-'));
  repo = join(work, 'repo');
  bin = join(work, 'bin');
  mkdirSync(bin);
  // `kupenstack` as the workflow calls it, from this checkout.
  writeFileSync(join(bin, 'kupenstack'), `#!/bin/sh\nexec "${process.execPath}" "${join(root, 'agent/cli/main.ts')}" "$@"\n`);
  chmodSync(join(bin, 'kupenstack'), 0o755);
  cpSync(join(root, 'repo-template'), repo, { recursive: true });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-qm', 'base');
  git('checkout', '-qb', 'feature');
  const net = join(repo, 'tenants/team-a/network.yaml');
  writeFileSync(net, readFileSync(net, 'utf8').replace('description: Application tier', 'description: Application tier (v2)'));
  git('commit', '-qam', 'change');
  git('checkout', '-q', 'main');
  git('merge', '-q', '--no-ff', '-m', 'merge feature', 'feature'); // what actions/checkout gives a pull_request run
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function runScript(script: string, env: Record<string, string>): { code: number; stderr: string } {
  const r = spawnSync('bash', ['-e', '-c', script], { cwd: repo, encoding: 'utf8', env: { PATH: `${bin}:${process.env.PATH}`, HOME: work, ...env }, timeout: 120_000 });
  return { code: r.status ?? -1, stderr: r.stderr };
}

// Each test runs the CLI twice (validate, then plan against a Git base): 12 s alone, 40 s on a loaded machine.
describe('repo-template CI', { timeout: 120_000 }, () => {
  it('GitHub: the plan step writes the Markdown plan of the merge against its base and reports changes', () => {
    const workflow = parse(readFileSync(join(root, 'repo-template/.github/workflows/kupenstack-plan.yml'), 'utf8')) as { jobs: { plan: { steps: { name?: string; run?: string }[] } } };
    const step = workflow.jobs.plan.steps.find((s) => s.name === 'Validate and plan')!;
    const output = join(work, 'github-output');
    writeFileSync(output, '');
    const r = runScript(step.run!, { GITHUB_OUTPUT: output, GITHUB_SERVER_URL: 'https://github.example', GITHUB_REPOSITORY: 'o/r', GITHUB_RUN_ID: '1' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readFileSync(output, 'utf8')).toBe('status=changes\n');
    const plan = readFileSync(join(repo, 'plan.md'), 'utf8');
    expect(plan.startsWith('<!-- kupenstack-plan -->')).toBe(true);
    expect(plan).toMatch(/team-a\/Network\/app-net/);
    expect(plan).toMatch(/Application tier \(v2\)/);
    rmSync(join(repo, 'plan.md'));
  });

  it('GitLab: the job script plans the merge request against its target', () => {
    const ci = parse(readFileSync(join(root, 'repo-template/.gitlab-ci.yml'), 'utf8')) as Record<string, { script?: string[] }>;
    const job = Object.values(ci).find((j) => j.script?.some((s) => s.includes('kupenstack plan')))!;
    const planScript = job.script!.find((s) => s.includes('kupenstack plan'))!;
    const r = runScript(`${planScript}\necho "status=$status"`, { CI_MERGE_REQUEST_TARGET_BRANCH_SHA: git('rev-parse', 'HEAD^1'), CI_COMMIT_SHA: git('rev-parse', 'HEAD'), CI_JOB_URL: 'https://gitlab.example/job/1' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const plan = readFileSync(join(repo, 'plan.md'), 'utf8');
    expect(plan).toMatch(/team-a\/Network\/app-net/);
    rmSync(join(repo, 'plan.md'));
  });
});
