import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const run = (...args: string[]) => spawnSync(process.execPath, ['agent/cli/main.ts', ...args], { encoding: 'utf8' });

describe('the kupenstack command', () => {
  it('prints the package version', () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(execFileSync(process.execPath, ['agent/cli/main.ts', '--version'], { encoding: 'utf8' }).trim()).toBe(version);
  });

  it('lists its commands in --help and exits 0', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: kupenstack');
    expect(r.stdout).toContain('validate');
  });

  it('rejects an unknown command with exit 1 and a hint', () => {
    const r = run('valdate');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/unknown command 'valdate'/);
    expect(r.stderr).toMatch(/validate/);
  });
});
