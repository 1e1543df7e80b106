import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Workspace } from './apply.ts';
import { testCloudName } from './context.ts';

/** A small seeded PRNG (mulberry32): the same seed replays the same decisions (kill delays, faults). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * `kupenstack apply` of the workspace's repository (or another folder, `path`) as a child, for crash tests.
 * `writes()`: the writes it had begun so far, counted from its log ("create
 * <address>", "update  <address>: …", "delete  <address> (<id>)" are printed
 * just before each call). A non-zero exit keeps its stderr in the workspace log.
 * `stderr()`: its log so far; `env`: added to the child's environment (e.g. KUPENSTACK_HELM).
 */
export function runApply(ws: Workspace, args: string[], path = ws.repo, env: NodeJS.ProcessEnv = {}): { kill: () => void; signal: (sig: NodeJS.Signals) => void; writes: () => number; stderr: () => string; firstWrite: Promise<void>; done: Promise<number | null> } {
  const child = spawn(process.execPath, ['agent/cli/main.ts', 'apply', path, '--cloud', testCloudName, '--config', join(ws.dir, 'kupenstack.yaml'), ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  let wrote = (): void => undefined;
  const firstWrite = new Promise<void>((resolve) => (wrote = resolve));
  const writes = (): number => stderr.split('\n').filter((l) => /^(create|update|delete) {2}\S/.test(l)).length;
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
    if (writes() > 0) wrote();
  });
  const done = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    kill: () => child.kill('SIGKILL'),
    signal: (sig) => child.kill(sig),
    writes,
    stderr: () => stderr,
    firstWrite,
    done: done.then((code) => {
      if (code !== null && code !== 0) ws.log.push(stderr);
      return code;
    }),
  };
}
