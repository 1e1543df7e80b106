import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The test bed's Kubernetes plane (test/testbed/kubernetes): cluster-admin kubeconfig and the kubectl built beside it. */
const home = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';
export const adminKubeconfig = join(home, 'kubernetes/admin.kubeconfig');
const repo = join(import.meta.dirname, '../../..');
const kubectlBin = join(spawnSync('bash', [join(repo, 'test/testbed/kubernetes/build.sh'), '--dir'], { encoding: 'utf8' }).stdout.trim(), 'kubectl');

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** kubectl as a given user (a kubeconfig); never throws, the caller checks the exit status. */
export function kubectl(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Run {
  const r = spawnSync(kubectlBin, ['--kubeconfig', opts.kubeconfig ?? adminKubeconfig, ...args], { encoding: 'utf8', input: opts.input, timeout: 60_000 });
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

export function kubectlOk(args: string[], opts: { kubeconfig?: string; input?: string } = {}): string {
  const r = kubectl(args, opts);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

export function getJson<T>(args: string[]): T {
  return JSON.parse(kubectlOk([...args, '-o', 'json'])) as T;
}

/** A kubeconfig that logs in as a ServiceAccount with a TokenRequest token (what a tenant gets). */
export function tenantKubeconfig(namespace: string, serviceAccount: string): string {
  const token = kubectlOk(['create', 'token', serviceAccount, '-n', namespace, '--duration', '1h']).trim();
  const admin = readFileSync(adminKubeconfig, 'utf8');
  const server = /server:\s*(\S+)/.exec(admin)![1]!;
  const ca = /certificate-authority-data:\s*(\S+)/.exec(admin)?.[1];
  const caFile = /certificate-authority:\s*(\S+)/.exec(admin)?.[1];
  const dir = mkdtempSync(join(tmpdir(), 'ks-tenant-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: testbed\n  cluster:\n    server: ${server}\n    ${ca ? `certificate-authority-data: ${ca}` : `certificate-authority: ${caFile}`}`,
      `users:\n- name: tenant\n  user:\n    token: ${token}`,
      'contexts:\n- name: tenant\n  context: {cluster: testbed, user: tenant}',
      'current-context: tenant',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return file;
}

/** `kupenstack controller` as a child process (so a test can kill -9 it), its output in a file. */
export class ControllerProcess {
  child?: ChildProcess;
  readonly logFile: string;
  private readonly args: string[];

  constructor(args: string[]) {
    this.args = args;
    this.logFile = join(mkdtempSync(join(tmpdir(), 'ks-controller-')), 'controller.log');
  }

  async start(): Promise<void> {
    const out = createWriteStream(this.logFile, { flags: 'a' });
    await new Promise<void>((resolve) => out.once('open', () => resolve()));
    this.child = spawn(process.execPath, [join(repo, 'agent/cli/main.ts'), 'controller', '--kubeconfig', adminKubeconfig, ...this.args], { stdio: ['ignore', out, out] });
    await until('the controller to start', () => Promise.resolve(this.log().includes('controller started')), 60_000);
  }

  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  kill9(): void {
    this.child?.kill('SIGKILL');
    this.child = undefined;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  }
}

export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000, everyMs = 500): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(everyMs);
  }
}
