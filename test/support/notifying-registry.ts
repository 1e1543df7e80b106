import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './agent-harness.ts';

/**
 * A distribution 2.8 instance of its own (test/testbed/registry/notifying.sh)
 * that sends push notifications to `hookUrl` with the shared secret, and its
 * access log, for tests and benchmarks of registry notifications.
 */
export interface NotifyingRegistry {
  /** host:port, plain HTTP. */
  host: string;
  /** The access log so far (the registry's own record of every request). */
  log(): string;
  stop(): Promise<void>;
}

export async function startNotifyingRegistry(hookUrl: string, secret: string): Promise<NotifyingRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'ks-notifying-registry-'));
  const secretFile = join(dir, 'secret');
  writeFileSync(secretFile, secret, { mode: 0o600 });
  const port = await freePort();
  const logFile = join(dir, 'registry.log');
  const out = openSync(logFile, 'a');
  const child = spawn('bash', ['test/testbed/registry/notifying.sh', dir, String(port), hookUrl, secretFile], { stdio: ['ignore', out, out] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const log = (): string => readFileSync(logFile, 'utf8');
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the notifying registry exited: ${log()}`);
    if (await fetch(`http://127.0.0.1:${port}/v2/`).then((r) => r.ok, () => false)) break;
    if (i > 100) throw new Error(`the notifying registry did not answer on 127.0.0.1:${port}: ${log()}`);
    await sleep(100);
  }
  return {
    host: `127.0.0.1:${port}`,
    log,
    async stop() {
      // Only the process this helper started (notifying.sh execs docker-registry: same PID).
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
