// The two sides of the ORC bench (orc.ts), each a controller run as a host process against the test bed's API
// server and OpenStack, logged in as a Keystone user of its own (orc-identity.ts): KupenStack's in-cluster controller
// (from dist/, as in the image; one project per opted-in namespace, which it makes) and ORC's manager (one project per
// namespace made here, its credentials a clouds.yaml Secret in the namespace). The same objects both ways, written
// by `kubectl apply` into fresh namespaces.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../../agent/kube/client.ts';
import { join } from 'node:path';
import type { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { adminKubeconfig, ControllerProcess, kubectl, kubectlOk, until } from '../integration/controller/harness.ts';
import { installOrcCrds, OrcManager, writeCloudsSecret, type OrcBuild } from '../testbed/orc/peer.ts';
import { finalizerPolicy } from './finalizer-policy.ts';
import { ticksPerSecond } from './machine-cpu.ts';
import { kupenstackManifests, orcManifests, type Extra } from './orc-manifests.ts';
import { cloudsYaml, grantAdmin, makeProject, type BenchUser } from './orc-identity.ts';

export interface Side {
  label: string;
  user: BenchUser;
  /** The OpenStack project a namespace's objects land in. */
  project: (ns: string) => string;
  /** Makes the namespaces (and whatever a side needs in them), then starts the controller on them. */
  start: (namespaces: string[], extra?: Extra) => Promise<void>;
  manifests: (ns: string, scale: number, key: string, extra?: Extra) => string;
  /** How many objects of `ns` are Ready (KupenStack: Ready at the current generation; ORC: Available and not Progressing). */
  ready: (ns: string) => Promise<number>;
  /** How many of the bench's kinds of objects `ns` holds. */
  count: (ns: string) => Promise<number>;
  pid: () => number;
  /** The controller's own count of its API-server requests since it started. */
  apiRequests: () => Promise<number>;
  kill9: () => Promise<void>;
  /** Starts the controller again on the same namespaces (after a kill -9, or with other settings). */
  restart: (extra?: Extra) => Promise<void>;
  /** Deletes the namespaces through the controller (it deletes what it made in OpenStack), then stops it. */
  cleanUp: (namespaces: string[]) => Promise<void>;
  stop: () => Promise<void>;
}


const repo = join(import.meta.dirname, '../..');
const built = join(repo, 'dist/agent/cli/main.js');

interface Cond {
  type: string;
  status: string;
  observedGeneration?: number;
}
interface Obj {
  metadata: { generation?: number };
  status?: { observedGeneration?: number; conditions?: Cond[] };
}
const cond = (o: Obj, type: string): Cond | undefined => o.status?.conditions?.find((c) => c.type === type);

// The bench's polls list through one client in this process: a kubectl per poll cost the machine ~0.2 CPU-s each
// (5.4 CPU-s of a 27 s first apply on the bed's 2 cores), time both sides' controllers and OpenStack then lacked.
const customObjects = loadKubeConfig({ kubeconfig: adminKubeconfig }).makeApiClient(k8s.CustomObjectsApi);

/** The objects of `plurals` (group/version) in `ns`; none while the namespace or a kind cannot be listed. */
async function items(group: string, version: string, plurals: string[], ns: string): Promise<Obj[]> {
  const lists = await Promise.all(
    plurals.map((plural) => customObjects.listNamespacedCustomObject({ group, version, namespace: ns, plural }).then((l) => (l as { items: Obj[] }).items, () => [] as Obj[])),
  );
  return lists.flat();
}

const benchPlurals = ['networks', 'subnets', 'securitygroups', 'ports', 'keypairs', 'flavors'];

export function kupenstackSide(user: BenchUser, cloudsFile: string, run: string): Side {
  const optIn = `orcbench-${run}`;
  let controller: ControllerProcess | undefined;
  let current: string[] = [];
  // As the chart deploys the controller: its finalizer policy sets the finalizer at create (where the API server serves it).
  let policy: { served: boolean; remove: () => void } | undefined;
  const ours = (ns: string): Promise<Obj[]> => items('kupenstack.io', 'v1alpha1', benchPlurals, ns);
  const begin = async (extra: Extra = {}): Promise<void> => {
    const resync = extra.resyncSeconds ? ['--resync', `${extra.resyncSeconds}s`] : [];
    controller = new ControllerProcess(adminKubeconfig, ['--clouds', cloudsFile, '--cloud', 'bench', '--owner', `ksb${run}`, '--project-prefix', 'ks-', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs', ...resync], built);
    await controller.start();
  };
  const calls = (): number => {
    const all = [...(controller?.log() ?? '').matchAll(/kubernetes (\d+) lists, (\d+) watches, (\d+) gets, (\d+) writes/g)];
    const m = all.at(-1);
    return m ? m.slice(1, 5).reduce((s, x) => s + Number(x), 0) : 0;
  };
  return {
    label: 'kupenstack',
    user,
    project: (ns) => `ks-${ns}`,
    start: async (namespaces, extra) => {
      for (const ns of namespaces) {
        kubectlOk(['create', 'namespace', ns]);
        kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`]);
      }
      if (!policy) {
        policy = await finalizerPolicy(`kupenstack.io/project=${optIn}`, namespaces[0]!);
        process.stderr.write(`[bench] orc: the chart's finalizer policy ${policy.served ? 'installed (the finalizer is set at create)' : 'not served by this API server (the controller patches the finalizer in)'}\n`);
      }
      current = namespaces;
      await begin(extra);
    },
    manifests: kupenstackManifests,
    ready: async (ns) => (await ours(ns)).filter((o) => cond(o, 'Ready')?.status === 'True' && o.status?.observedGeneration === o.metadata.generation).length,
    count: async (ns) => (await ours(ns)).length,
    pid: () => controller!.child!.pid!,
    apiRequests: () => Promise.resolve(calls()),
    kill9: async () => {
      const child = controller?.child;
      if (!child) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      controller!.child = undefined;
    },
    restart: async (extra) => {
      await controller?.stop();
      await begin(extra);
    },
    cleanUp: async (namespaces) => {
      for (const ns of namespaces) kubectl(['delete', 'namespace', ns, '--wait=false']);
      try {
        await until('the bench namespaces to be deleted (kupenstack)', () => Promise.resolve(namespaces.every((ns) => kubectl(['get', 'namespace', ns]).status !== 0)), 1_800_000, 2_000);
      } finally {
        current = current.filter((n) => !namespaces.includes(n));
        if (current.length === 0) await controller?.stop();
      }
    },
    stop: async () => {
      await controller?.stop();
      policy?.remove();
      policy = undefined;
    },
  };
}

const orcKinds = benchPlurals.map((k) => `${k}.openstack.k-orc.cloud`).join(',');
const orcItems = (ns: string): Promise<Obj[]> => items('openstack.k-orc.cloud', 'v1alpha1', benchPlurals, ns);

export function orcSide(user: BenchUser, build: OrcBuild, cloud: OpenStackCloud): Side {
  let manager: OrcManager | undefined;
  let current: string[] = [];
  const apiTotal = async (): Promise<number> => {
    if (!manager?.child) return 0;
    const text = await manager.metrics();
    return [...text.matchAll(/^rest_client_requests_total\{[^}]*\} (\d+)/gm)].reduce((s, m) => s + Number(m[1]), 0);
  };
  const begin = async (): Promise<void> => {
    manager = new OrcManager(build, current);
    await manager.start();
  };
  return {
    label: 'ORC',
    user,
    project: (ns) => ns,
    start: async (namespaces) => {
      installOrcCrds(build);
      for (const ns of namespaces) {
        kubectlOk(['create', 'namespace', ns]);
        await grantAdmin(cloud, user, await makeProject(cloud, ns));
        writeCloudsSecret(ns, 'orc-clouds', cloudsYaml('bench', user, ns));
      }
      current = namespaces;
      await begin();
    },
    manifests: orcManifests,
    // Done with the current spec: Available, and Progressing False for this generation (not a status left from before a change).
    ready: async (ns) =>
      (await orcItems(ns)).filter((o) => {
        const p = cond(o, 'Progressing');
        return cond(o, 'Available')?.status === 'True' && p?.status === 'False' && (p.observedGeneration ?? o.metadata.generation) === o.metadata.generation;
      }).length,
    count: async (ns) => (await orcItems(ns)).length,
    pid: () => manager!.pid,
    apiRequests: apiTotal,
    kill9: async () => manager?.kill9(),
    restart: async () => {
      await manager?.stop();
      await begin();
    },
    cleanUp: async (namespaces) => {
      // The objects first, while the manager runs (its finalizers delete them in OpenStack), then the namespaces.
      for (const ns of namespaces) kubectl(['delete', orcKinds, '--all', '-n', ns, '--wait=false']);
      try {
        await until('the ORC objects to be deleted', async () => (await Promise.all(namespaces.map(orcItems))).every((l) => l.length === 0), 1_800_000, 2_000);
        // ORC puts one finalizer per kind on the credentials Secret and lifts them itself once the Secret is deleted
        // and nothing uses it: the namespaces go while the manager still runs.
        for (const ns of namespaces) kubectl(['delete', 'namespace', ns, '--wait=false']);
        await until('the ORC namespaces to be deleted', () => Promise.resolve(namespaces.every((ns) => kubectl(['get', 'namespace', ns]).status !== 0)), 180_000, 2_000).catch(() => {
          for (const ns of namespaces) kubectl(['patch', 'secret', 'orc-clouds', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
        });
      } finally {
        current = current.filter((n) => !namespaces.includes(n));
        if (current.length === 0) await manager?.stop();
        for (const ns of namespaces) purgeOrcProject(ns);
      }
    },
    stop: async () => {
      await manager?.stop();
    },
  };
}

/** What ORC left of a namespace (nothing when its finalizers ran): the project purged and deleted, its flavors (Nova's names are global) deleted. */
function purgeOrcProject(ns: string): void {
  const os = 'openstack --os-cloud kupenstack-local';
  spawnSync('bash', ['-c', `${os} project purge --project ${ns}; ${os} flavor list --all -f value -c Name | grep '^${ns}-flavor-' | xargs -r ${os} flavor delete`], { stdio: 'ignore', timeout: 600_000 });
}


/** CPU seconds (user + system) a process has used so far. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / ticksPerSecond;
}

/** A process's memory line of /proc/PID/status, MiB: VmHWM (its peak resident set so far) or VmRSS (now). */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
}

export const peakRssMiB = (pid: number): number => statusMiB(pid, 'VmHWM');
export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS');
