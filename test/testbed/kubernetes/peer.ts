import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePeers } from '../deferred.ts';

/**
 * The test bed's Kubernetes control plane as tests see it (test/testbed/kubernetes/up.sh
 * starts it): where the admin kubeconfig and the version-matched kubectl are.
 */
const here = dirname(fileURLToPath(import.meta.url));
const versions = Object.fromEntries(
  readFileSync(join(here, 'versions.sh'), 'utf8')
    .split('\n')
    .map((l) => /^([A-Z0-9_]+)=(\S+)/.exec(l))
    .filter((m) => m !== null)
    .map((m) => [m[1]!, m[2]!]),
);
const home = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';
const cache = process.env.KUPENSTACK_TESTBED_CACHE ?? '/var/cache/kupenstack-testbed';

export const kube = {
  version: versions.K8S_VERSION!,
  server: 'https://127.0.0.1:6443',
  /** cluster-admin (client certificate, group system:masters). */
  kubeconfig: join(home, 'kubernetes/admin.kubeconfig'),
  caFile: join(home, 'kubernetes/pki/ca.crt'),
  bin: join(cache, `kubernetes-${versions.K8S_VERSION!}/bin`),
  node: 'kwok-node-0',
} as const;

export const kubectlPath = join(kube.bin, 'kubectl');

/** True when the API server answers /readyz with 200, its certificate verified by the test bed's CA. */
function apiReady(): Promise<boolean> {
  if (!existsSync(kube.caFile) || !existsSync(join(kube.bin, 'kubectl'))) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = get(`${kube.server}/readyz`, { ca: readFileSync(kube.caFile), timeout: 3_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * The API server answers, and status.sh finds every process of the plane (kwok's included) to be the
 * one up.sh started, and the node Ready: an API server alone would hide a dead kwok until pods hang.
 */
async function planeReady(): Promise<boolean> {
  if (!(await apiReady())) return false;
  return spawnSync('bash', [join(here, 'status.sh')], { stdio: 'ignore', timeout: 60_000 }).status === 0;
}

// Deferred by the suite's global setup while its binaries build: importing this module starts the plane
// (or restarts what of it is down).
await ensurePeers(['kubernetes'], planeReady);

/**
 * The Kubernetes build's helm, waited for: the plane starts once its own binaries are built, and on a
 * fresh machine the same build makes helm after them (kubernetes/build.sh --wait). Fails loudly when
 * the build does.
 */
export function builtHelm(): string {
  const helm = join(kube.bin, 'helm');
  if (existsSync(helm)) return helm;
  process.stderr.write(`[testbed] waiting for the Kubernetes build's helm (${helm})\n`);
  const r = spawnSync('bash', [join(here, 'build.sh'), '--wait', 'helm'], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 60 * 60_000 });
  if (r.status !== 0 || !existsSync(helm)) throw new Error(`the Kubernetes build's helm is not there (build.sh --wait helm: exit ${r.status ?? r.signal ?? 'unknown'}):\n${(r.stderr ?? '').slice(-3000)}`);
  return helm;
}

export interface KubectlResult { code: number; stdout: string; stderr: string }

/** kubectl as cluster-admin (or with another kubeconfig); never throws, the test asserts on the result. */
export async function kubectl(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Promise<KubectlResult> {
  return new Promise((resolve) => {
    const child = execFile(kubectlPath, [`--kubeconfig=${opts.kubeconfig ?? kube.kubeconfig}`, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** kubectl that must succeed: its stdout, or an error with its stderr. */
export async function kubectlOk(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Promise<string> {
  const r = await kubectl(args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (exit ${r.code}): ${r.stderr}`);
  return r.stdout;
}

/** A kubeconfig file for a bearer token (a ServiceAccount's TokenRequest token); removed by the returned dispose. */
export function tokenKubeconfig(token: string, namespace = 'default'): { path: string; dispose: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ks-kubeconfig-'));
  const path = join(dir, 'kubeconfig');
  const ca = readFileSync(kube.caFile).toString('base64');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: testbed, cluster: {server: "${kube.server}", certificate-authority-data: "${ca}"}}]`,
      `users: [{name: token, user: {token: "${token}"}}]`,
      `contexts: [{name: testbed, context: {cluster: testbed, user: token, namespace: ${namespace}}}]`,
      'current-context: testbed',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return { path, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}
