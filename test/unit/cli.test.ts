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

  it('loads only the module of the command it runs: `image` never loads the Kubernetes client (~90 MB)', () => {
    // A resolve hook that says when anything asks for @kubernetes/client-node.
    const hook = `data:text/javascript,import{registerHooks}from'node:module';registerHooks({resolve(s,c,n){if(s.startsWith('@kubernetes/client-node'))process.stderr.write('LOADED client-node\\n');return n(s,c)}})`;
    const traced = (...args: string[]) => spawnSync(process.execPath, ['--import', hook, 'agent/cli/main.ts', ...args], { encoding: 'utf8' });
    const image = traced('image', 'export', '--help');
    expect(image.status, image.stderr).toBe(0);
    expect(image.stderr).not.toContain('LOADED client-node');
    // The hook does see it where it is used.
    const controller = traced('controller', '--help');
    expect(controller.status, controller.stderr).toBe(0);
    expect(controller.stderr).toContain('LOADED client-node');
    // The full help still lists every command.
    expect(run('--help').stdout).toMatch(/validate[\s\S]*apply[\s\S]*plan[\s\S]*image[\s\S]*agent[\s\S]*controller/);
  });

  it('rejects an unknown command with exit 1 and a hint', () => {
    const r = run('valdate');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/unknown command 'valdate'/);
    expect(r.stderr).toMatch(/validate/);
  });
});
