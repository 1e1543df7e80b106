import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { kube, kubectlPath, tokenKubeconfig } from '../../testbed/kubernetes/peer.ts';
import { agentFlags } from '../../support/agent-flags.ts';
import { peers } from '../../support/peers.ts';

/** The test bed's Kubernetes plane (test/testbed/kubernetes): cluster-admin kubeconfig and the kubectl built beside it. */
export const adminKubeconfig = kube.kubeconfig;
const repo = join(import.meta.dirname, '../../..');

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** kubectl as a given user (a kubeconfig); never throws, the caller checks the exit status. */
export function kubectl(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Run {
  const r = spawnSync(kubectlPath, ['--kubeconfig', opts.kubeconfig ?? adminKubeconfig, ...args], { encoding: 'utf8', input: opts.input, timeout: 60_000 });
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

/** A kubeconfig that logs in as a ServiceAccount with a TokenRequest token (what a tenant, or the controller's pod, gets). */
export function serviceAccountKubeconfig(namespace: string, serviceAccount: string): string {
  const token = kubectlOk(['create', 'token', serviceAccount, '-n', namespace, '--duration', '2h']).trim();
  return tokenKubeconfig(token, namespace).path;
}

/** `kupenstack controller` as a child process (so a test can kill -9 it), its output in a file. */
export class ControllerProcess {
  child?: ChildProcess;
  readonly logFile: string;
  private readonly args: string[];

  private readonly kubeconfig: string;
  private readonly entry: string;
  private readonly wrap: string[];

  /**
   * `entry`: the sources by default; the bench runs the build (dist/), as the image does.
   * `wrap`: a command prefix that execs the rest (same PID, so kill -9 reaches the controller), e.g. ClusterHosts.wrap.
   */
  constructor(kubeconfig: string, args: string[], entry = join(repo, 'agent/cli/main.ts'), wrap: string[] = []) {
    this.kubeconfig = kubeconfig;
    this.wrap = wrap;
    // The test bed's registries, image servers and OpenStack are on loopback: a test that does not set the egress policy itself opens loopback, as a cluster admin would with a rule.
    const egress = args.some((a) => a.startsWith('--egress') || a === '--no-egress-policy') ? args : [...args, '--egress-allow', '*=>127.0.0.0/8,::1/128'];
    // The cloud lifecycle drives every OpenStackCloud of the cluster unless a selector narrows it: a test that names none
    // gets one that matches no cloud, so it never installs into another file's cloud (a real cloud left by a killed run).
    const ownClouds = egress.some((a) => a === '--cloud-selector' || a === '--no-cloud-lifecycle') ? egress : [...egress, '--cloud-selector', `kupenstack.io/test-run=none-${process.pid}`];
    // Its output is a file, not a terminal: without the flag it would be JSON. Text unless the test asks for JSON, whose lines it then parses (jsonLines).
    this.args = ownClouds.includes('--log-format') ? ownClouds : [...ownClouds, '--log-format', 'text'];
    this.entry = entry;
    this.logFile = join(mkdtempSync(join(tmpdir(), 'ks-controller-')), 'controller.log');
  }

  async start(): Promise<void> {
    // A restart appends to the same log: only a "controller started" after this offset is the new process's (audit W13).
    const from = this.log().length;
    const out = createWriteStream(this.logFile, { flags: 'a' });
    await new Promise<void>((resolve) => out.once('open', () => resolve()));
    const command = [process.execPath, ...agentFlags(), this.entry, 'controller', '--kubeconfig', this.kubeconfig, ...this.args];
    const [file, ...rest] = [...this.wrap, ...command];
    this.child = spawn(file!, rest, { stdio: ['ignore', out, out] });
    // On a loaded test bed, node's start (type stripping of the sources) alone can take a minute.
    await until('the controller to start', () => Promise.resolve(this.log().slice(from).includes('controller started')), 180_000);
  }

  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /**
   * The log from `from` (a character offset) on as JSON objects (a controller started with `--log-format json`):
   * a complete line that is not one JSON object with level, time and msg fails the test; a line still being written is left out.
   */
  jsonLines(from = 0): Record<string, unknown>[] {
    const text = this.log().slice(from);
    const complete = text.slice(0, text.lastIndexOf('\n') + 1);
    return complete
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        let o: unknown;
        try {
          o = JSON.parse(l);
        } catch (err) {
          throw new Error(`${this.logFile}: a line of the controller's log is not JSON: ${l.slice(0, 300)}`, { cause: err });
        }
        const rec = o as Record<string, unknown>;
        if (typeof rec.level !== 'number' || typeof rec.time !== 'string' || typeof rec.msg !== 'string') throw new Error(`${this.logFile}: a JSON line without level, time and msg: ${l.slice(0, 300)}`);
        return rec;
      });
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
  const start = Date.now();
  const end = start + timeoutMs;
  for (;;) {
    if (await check()) {
      // Where a slow test spends its time, in CI's output too: only waits long enough to matter.
      if (Date.now() - start > 10_000) console.log(`[until] ${what}: ${((Date.now() - start) / 1000).toFixed(1)} s`);
      return;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * What a controller test sets up on the shared plane: this checkout's CRDs (established) and RBAC (deploy/rbac),
 * the controller's namespace `system`, and the tenant namespaces opted in by `optIn`.
 */
export function prepareControllerBed(o: { system: string; namespaces: string[]; optIn: string }): void {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.system } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  for (const ns of o.namespaces) {
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${o.optIn}`]);
  }
}

/**
 * What every Sync test sets up on the shared plane: this checkout's CRDs (established) and RBAC,
 * the controller's namespace, the tenant namespaces opted in by `optIn`, a `gitops` ServiceAccount
 * with kupenstack-edit in `gitopsIn` only, and the Git credentials Secret the Syncs name.
 */
export function prepareSyncBed(o: { system: string; namespaces: string[]; optIn: string; gitopsIn: string; gitSecret: string }): void {
  prepareControllerBed(o);
  kubectlOk(['create', 'serviceaccount', 'gitops', '-n', o.gitopsIn]);
  kubectlOk(['create', 'rolebinding', 'gitops-edit', '-n', o.gitopsIn, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${o.gitopsIn}:gitops`]);
  kubectlOk(['create', 'secret', 'generic', o.gitSecret, '-n', o.system, `--from-literal=username=${peers.git.user}`, `--from-literal=password=${peers.git.password}`]);
}
