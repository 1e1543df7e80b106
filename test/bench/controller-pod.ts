import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { testCloudName } from '../support/context.ts';
import { until } from '../integration/controller/harness.ts';
import { buildImage } from '../testbed/image/image.ts';
import { builtHelm, kube, kubectl, kubectlOk } from '../testbed/kubernetes/peer.ts';
import { onRealNode, realNode } from '../testbed/node/peer.ts';
import { namespaceManifests } from './controller.ts';
import type { BenchRow } from './table.ts';

/*
 * The controller as the chart runs it (issue 28): `helm install` of deploy/chart/kupenstack with the
 * image the test bed builds, 2 replicas with leader election on the test bed's real node (kubelet +
 * containerd), then N custom resources in 10 namespaces. The memory is the kubelet's own account
 * (`/stats/summary`, the container's working set, what the kubelet and an OOM decision look at),
 * sampled every 5 s from the first resource to convergence; the peak and the value after convergence
 * are reported for the leader and the follower. BENCH_POD_N sets N (default 1 000).
 */
const repo = join(import.meta.dirname, '../..');
const namespaceCount = 10;
const goalMiB = 256;
// Waited for: on a fresh machine the plane is up before the same build has made helm.
const helmPath = builtHelm();
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);

interface Summary { pods: { podRef: { name: string; namespace: string }; containers?: { name: string; memory?: { workingSetBytes?: number } }[] }[] }
interface Listed { items: { status?: { id?: string; conditions?: { type: string; status: string }[] } }[] }

const mib = (bytes: number): number => bytes / 2 ** 20;

export async function benchControllerPod(): Promise<BenchRow[]> {
  const total = Number(process.env.BENCH_POD_N ?? 1_000);
  const perNamespace = Math.floor(total / namespaceCount);
  const n = perNamespace * namespaceCount;
  const run = randomBytes(3).toString('hex');
  const system = `podb-${run}-system`;
  const release = `kupenstack-podb-${run}`;
  const optIn = `podb-${run}`;
  const prefix = 'ks-podb-';
  const tenants = Array.from({ length: namespaceCount }, (_, k) => `podb-${run}-t${k}`);
  const helm = (args: string[]): string => execFileSync(helmPath, [...args, `--kubeconfig=${kube.kubeconfig}`], { encoding: 'utf8', maxBuffer: 64 << 20 });

  const built = buildImage({ push: true });
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', join(repo, 'deploy/crds')]);
  await kubectlOk(['create', 'namespace', system]);
  const clouds = parse(readFileSync(join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, unknown> };
  await kubectlOk(['create', 'secret', 'generic', 'kupenstack-cloud', '-n', system, `--from-literal=clouds.yaml=${stringify({ clouds: { [testCloudName]: clouds.clouds[testCloudName] } })}`]);
  const samples = new Map<string, number[]>();
  const sample = async (): Promise<void> => {
    const summary = JSON.parse(await kubectlOk(['get', '--raw', `/api/v1/nodes/${realNode.name}/proxy/stats/summary`])) as Summary;
    for (const p of summary.pods.filter((x) => x.podRef.namespace === system)) {
      const ws = p.containers?.find((c) => c.name === 'controller')?.memory?.workingSetBytes;
      if (ws) samples.set(p.podRef.name, [...(samples.get(p.podRef.name) ?? []), ws]);
    }
  };
  let sampler: NodeJS.Timeout | undefined;
  try {
    helm(['install', release, join(repo, 'deploy/chart/kupenstack'), '--namespace', system, '--skip-crds', '--wait', '--timeout', '5m',
      '--set', `image.digest=${built.digest ?? ''}`, '--set', 'image.pullPolicy=IfNotPresent', '--set', `cloud.name=${testCloudName}`,
      '--set', `controller.optInLabel=kupenstack.io/project=${optIn}`, '--set', 'controller.resync=10m',
      '--set-json', `controller.extraArgs=${JSON.stringify(['--owner', `podb${run}`, '--project-prefix', prefix, '--no-syncs'])}`,
      '--set-json', `nodeSelector=${JSON.stringify(onRealNode.nodeSelector)}`, '--set-json', `tolerations=${JSON.stringify(onRealNode.tolerations)}`,
      '--set', 'cloudLifecycle.enabled=false']);
    await sample();
    const idle = new Map([...samples].map(([pod, xs]) => [pod, xs.at(-1)!]));
    sampler = setInterval(() => void sample().catch(() => undefined), 5_000);
    const started = Date.now();
    for (const [k, ns] of tenants.entries()) {
      await kubectlOk(['create', 'namespace', ns]);
      await kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`]);
      await kubectlOk(['create', '-f', '-'], { input: namespaceManifests(ns, k, perNamespace) });
    }
    // Converged: every object of every namespace Ready with its OpenStack id in status.
    const ready = async (): Promise<number> => {
      let count = 0;
      for (const ns of tenants) {
        const listed = JSON.parse(await kubectlOk(['-n', ns, 'get', 'networks.kupenstack.io,subnets.kupenstack.io,securitygroups.kupenstack.io', '-o', 'json'])) as Listed;
        count += listed.items.filter((o) => o.status?.id && o.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
      }
      return count;
    };
    await until(`${n} resources Ready`, async () => (await ready()) === n, 3_600_000, 5_000);
    const convergedS = (Date.now() - started) / 1000;
    // One more sample a while after convergence: what stays held.
    await new Promise((r) => setTimeout(r, 15_000));
    clearInterval(sampler);
    await sample();
    const holder = (await kubectlOk(['-n', system, 'get', 'lease', `${release}-controller`, '-o', 'jsonpath={.spec.holderIdentity}'])).trim();
    const rows: BenchRow[] = [];
    for (const [pod, xs] of [...samples].sort(([a], [b]) => Number(holder.startsWith(`${b}_`)) - Number(holder.startsWith(`${a}_`)))) {
      const role = holder.startsWith(`${pod}_`) ? 'leader' : 'follower';
      const peak = mib(Math.max(...xs));
      const last = mib(xs.at(-1)!);
      process.stderr.write(`[bench] controller pod ${pod} (${role}): working set idle ${mib(idle.get(pod) ?? 0).toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB, after convergence ${last.toFixed(0)} MiB (${xs.length} samples); ${n} resources Ready in ${convergedS.toFixed(0)} s\n`);
      rows.push({
        name: `controller pod (${role}, real node) with ${n} resources: kubelet working set`,
        ours: `${last.toFixed(0)} MiB after convergence, peak ${peak.toFixed(0)} MiB (idle ${mib(idle.get(pod) ?? 0).toFixed(0)} MiB); converged in ${convergedS.toFixed(0)} s`,
        peer: 'chart limit 512 MiB',
        goal: `≤ ${goalMiB} MiB (peak)`,
        met: peak <= goalMiB,
      });
    }
    return rows;
  } finally {
    if (sampler) clearInterval(sampler);
    // The controller empties and deletes the projects as the namespaces go, then releases its finalizers.
    for (const ns of tenants) await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await until('the bench projects to be deleted', async () => {
      for (const ns of tenants) if ((await cloud.identity.list('/projects', 'projects', { name: `${prefix}${ns}` })).length > 0) return false;
      return true;
    }, 1_800_000, 5_000).catch((err: unknown) => process.stderr.write(`[bench] ${(err as Error).message}: projects ${prefix}podb-${run}-* left behind\n`));
    try {
      helm(['uninstall', release, '--namespace', system, '--wait']);
    } catch (err) {
      process.stderr.write(`[bench] helm uninstall ${release}: ${(err as Error).message}\n`);
    }
    await kubectl(['delete', 'namespace', system, '--wait=false']);
  }
}
