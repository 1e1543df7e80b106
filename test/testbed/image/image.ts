import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kube, kubectlPath } from '../kubernetes/peer.ts';

/**
 * The agent's container image as the test bed builds and runs it (build.sh,
 * run.sh beside this file), for the image test and `npm run demo`.
 */
const here = dirname(fileURLToPath(import.meta.url));

export interface BuiltImage {
  /** 127.0.0.1:5050/kupenstack/kupenstack:<package version> */
  image: string;
  id: string;
  /** With push: the manifest digest the registry holds, and the reference pulled back by it. */
  digest?: string;
  pulled?: string;
  /** The build script's log (stderr). */
  log: string;
}

/** build.sh [--push]: the image of the current sources (rebuilt only when they changed). Throws with the script's output. */
export function buildImage(opts: { push?: boolean } = {}): BuiltImage {
  const r = spawnSync('bash', [join(here, 'build.sh'), ...(opts.push ? ['--push'] : [])], { encoding: 'utf8', timeout: 40 * 60_000, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`test/testbed/image/build.sh failed (exit ${r.status ?? r.signal}):\n${r.stderr}`);
  const out = Object.fromEntries(r.stdout.split('\n').map((l) => /^([a-z]+)=(.+)$/.exec(l)).filter((m) => m !== null).map((m) => [m[1]!, m[2]!]));
  if (!out.image || !out.id) throw new Error(`test/testbed/image/build.sh printed no image:\n${r.stdout}\n${r.stderr}`);
  return { image: out.image, id: out.id, digest: out.digest, pulled: out.pulled, log: r.stderr };
}

/** Whether the current sources' image is built (build.sh --check): the demo then runs it, else the sources. */
export function imageIsCurrent(): boolean {
  return spawnSync('bash', [join(here, 'build.sh'), '--check'], { stdio: 'ignore' }).status === 0;
}

/**
 * What the kubelet mounts for a pod of `serviceAccount`: a token from the
 * TokenRequest API (audience: the API server), the cluster CA from the
 * namespace's kube-root-ca.crt ConfigMap, and the namespace.
 */
export function serviceAccountMount(namespace: string, serviceAccount: string, opts: { duration?: string; kubeconfig?: string } = {}): string {
  const kubectl = (args: string[]): string => {
    const r = spawnSync(kubectlPath, [`--kubeconfig=${opts.kubeconfig ?? kube.kubeconfig}`, ...args], { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  };
  const dir = mkdtempSync(join(tmpdir(), 'ks-serviceaccount-'));
  // As the kubelet projects it: readable by the container's user (65532), whoever runs this.
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'token'), kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration', opts.duration ?? '2h']).trim(), { mode: 0o644 });
  writeFileSync(join(dir, 'ca.crt'), kubectl(['get', 'configmap', 'kube-root-ca.crt', '-n', namespace, '-o', 'jsonpath={.data.ca\\.crt}']), { mode: 0o644 });
  writeFileSync(join(dir, 'namespace'), namespace, { mode: 0o644 });
  return dir;
}

/**
 * run.sh: the image's entrypoint with `args`; with `saDir`, as in a pod (service
 * account mounted, KUBERNETES_SERVICE_HOST/PORT set); host network. Its own process
 * group. Stop it with SIGTERM to its pid: run.sh passes it to the entrypoint (a
 * signal to the whole group would end buildah, and the container unannounced).
 */
export function runImage(saDir: string | undefined, args: string[], opts: { image?: string; entrypoint?: string; env?: Record<string, string>; stdio?: 'inherit' | 'pipe' } = {}): ChildProcess {
  const env = Object.entries(opts.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  return spawn('bash', [join(here, 'run.sh'), ...(saDir ? ['--sa-dir', saDir] : []), ...(opts.image ? ['--image', opts.image] : []), ...(opts.entrypoint ? ['--entrypoint', opts.entrypoint] : []), ...env, '--', ...args], {
    stdio: ['ignore', opts.stdio ?? 'pipe', opts.stdio ?? 'pipe'],
    detached: true,
  });
}

export interface ImageConfig {
  User?: string;
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
}

/** The image's OCI configuration, as buildah reads it from the test bed's storage. */
export function imageConfig(image: string): { id: string; config: ImageConfig } {
  const r = spawnSync('bash', ['-c', '. "$0/common.sh"; ib inspect --type image "$1"', here, image], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`buildah inspect ${image} failed: ${r.stderr}`);
  const info = JSON.parse(r.stdout) as { FromImageID: string; OCIv1: { config: ImageConfig } };
  return { id: info.FromImageID, config: info.OCIv1.config };
}
