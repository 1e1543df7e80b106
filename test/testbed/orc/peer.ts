import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { kube, kubectlPath } from '../kubernetes/peer.ts';

/**
 * ORC (openstack-resource-controller) as a benchmark peer, on demand only (never in `npm test`'s path):
 * its manager built by build.sh, its CRDs installed into the test bed's API server, one clouds.yaml
 * Secret per namespace (ORC reads credentials from the object's own namespace), and the manager run
 * as a host process this module started, stopped by its PID.
 */
export interface OrcBuild {
  /** The cache folder: bin/orc-manager, crd/*.yaml, SOURCE. */
  dir: string;
  /** What was built: the module version from the proxy, or the source archive. */
  source: string;
  /** The build's CRDs have `resyncPeriod` (upstream after v2.4.0): periodic drift detection can be set. */
  hasResync: boolean;
}

const here = import.meta.dirname;

function kubectlOrc(args: string[], input?: string): void {
  const r = spawnSync(kubectlPath, ['--kubeconfig', kube.kubeconfig, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`kubectl ${args[0]} for ORC failed (${r.status}): ${r.stderr}`);
}

/** Builds ORC once (build.sh, cached outside the repo; ORC_SOURCE_TGZ picks an archive), or finds the build. */
export function buildOrc(): OrcBuild {
  const built = spawnSync('bash', [join(here, 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (built.status !== 0) throw new Error('the ORC peer could not be built (test/testbed/orc/build.sh)');
  const dir = built.stdout.trim().split('\n').at(-1)!;
  const crds = readdirSync(join(dir, 'crd')).map((f) => readFileSync(join(dir, 'crd', f), 'utf8'));
  return { dir, source: readFileSync(join(dir, 'SOURCE'), 'utf8').trim(), hasResync: crds.some((c) => c.includes('resyncPeriod:')) };
}

/** ORC's CRDs, applied server-side and waited for (Established). */
export function installOrcCrds(build: OrcBuild): void {
  const dir = join(build.dir, 'crd');
  kubectlOrc(['apply', '--server-side', '--force-conflicts', '-f', dir]);
  kubectlOrc(['wait', '--for=condition=Established', '--timeout=60s', '-f', dir]);
}

/** The Secret ORC objects of `ns` name in `cloudCredentialsRef` (key clouds.yaml), sent on stdin: never on a command line or in a log. */
export function writeCloudsSecret(ns: string, name: string, cloudsYaml: string): void {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ns }, type: 'Opaque', stringData: { 'clouds.yaml': cloudsYaml } };
  kubectlOrc(['apply', '-f', '-'], JSON.stringify(secret));
}

/** A free loopback port (the manager's metrics endpoint; its health probes are off). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** The ORC manager as a child process (so the bench can kill -9 it), its output in a file, metrics on loopback. */
export class OrcManager {
  child?: ChildProcess;
  readonly logFile = join(mkdtempSync(join(tmpdir(), 'ks-orc-')), 'orc-manager.log');
  metricsPort = 0;
  private readonly bin: string;
  private readonly namespaces: readonly string[];

  constructor(build: OrcBuild, namespaces: readonly string[]) {
    this.bin = join(build.dir, 'bin', 'orc-manager');
    if (!existsSync(this.bin)) throw new Error(`no ORC manager at ${this.bin}: run test/testbed/orc/build.sh`);
    this.namespaces = namespaces;
  }

  /** Starts the manager on the bench's namespaces only and waits until its controllers run. */
  async start(): Promise<void> {
    const from = this.log().length;
    this.metricsPort = await freePort();
    const out = createWriteStream(this.logFile, { flags: 'a' });
    await new Promise<void>((resolve) => out.once('open', () => resolve()));
    const args = ['--kubeconfig', kube.kubeconfig, `--metrics-bind-address=127.0.0.1:${this.metricsPort}`, '--metrics-secure=false', '--health-probe-bind-address=0', ...this.namespaces.map((n) => `--namespace=${n}`)];
    this.child = spawn(this.bin, args, { stdio: ['ignore', out, out] });
    const deadline = Date.now() + 120_000;
    while (!/Starting workers/.test(this.log().slice(from))) {
      if (this.child.exitCode !== null) throw new Error(`the ORC manager exited (${this.child.exitCode}):\n${this.log().slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`the ORC manager did not start its workers in 120 s:\n${this.log().slice(-2000)}`);
      await sleep(200);
    }
  }

  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error('the ORC manager is not running');
    return pid;
  }

  log(): string {
    return existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }

  /** The manager's Prometheus text (controller-runtime's client and reconcile counters). */
  async metrics(): Promise<string> {
    const res = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`);
    if (!res.ok) throw new Error(`ORC metrics answered ${res.status}`);
    return res.text();
  }

  /** kill -9, as a crash: no clean-up of its own. */
  async kill9(): Promise<void> {
    await this.stopWith('SIGKILL');
  }

  /** SIGTERM, then SIGKILL after 10 s; only the process this object started. */
  async stop(): Promise<void> {
    await this.stopWith('SIGTERM');
  }

  private async stopWith(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.child = undefined;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  }
}
