import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { adminKubeconfig, kubectlOk, until } from '../integration/controller/harness.ts';
import { kubectlPath } from '../testbed/kubernetes/peer.ts';
import { testbedHome } from '../support/oci.ts';
import { shape } from './apply.ts';
import { methods, requestsOfUser } from './orc-identity.ts';
import { cpuByComponent, cpuSnapshot, describeCpu } from './machine-cpu.ts';
import { peakRssMiB, processCpuSeconds, rssMiB, type Side } from './orc-sides.ts';
import { measureRequests } from './request-cpu.ts';
import { maxBusy, waitForCalm } from './rounds.ts';
import type { BenchRow } from './table.ts';

/*
 * The measurements of the ORC bench (orc.ts), one side at a time. BENCH_ONLY=orc: KupenStack's in-cluster controller beside ORC (openstack-resource-controller, built by
 * test/testbed/orc/build.sh), both host processes against the test bed, the same objects both ways through
 * `kubectl apply` into fresh namespaces: the OpenTofu bench's 300 (60 networks, subnets, security groups with
 * one rule, ports; 30 key pairs, flavors). Interleaved rounds (the side that goes first alternates), each on a
 * fresh namespace and a freshly started controller; median and spread (min–max) of the rounds, load beside.
 * BENCH_ORC_OBJECTS scales the objects (default 300), BENCH_ORC_ROUNDS the rounds (3), BENCH_ORC_NOOP_SECONDS
 * the no-op window (300), BENCH_ORC_RESYNC_SECONDS the drift-detection period both sides get for it (60).
 */
export interface First {
  seconds: number;
  /** Neutron + Nova API workers' CPU on this side's own requests (request-cpu.ts). */
  cpu: number;
  requests: number;
  byMethod: Map<string, number>;
  apiServer: number;
  controllerCpu: number;
  peakRss: number;
  /** The controller's RSS once started, before the apply (MiB). */
  startRss: number;
  /** How busy the cores were (0–1) over the second before the apply. */
  busy: number;
  load: number;
  /** Where the machine's CPU went during the apply (machine-cpu.ts). */
  machine: string;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
export const spread = (xs: number[], digits: number): string => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

/** kubectl apply without blocking the event loop (the request sampler and the clock run meanwhile). */
export function kubectlApply(yaml: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectlPath, ['--kubeconfig', adminKubeconfig, 'apply', '-f', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kubectl apply failed (${code}): ${err.slice(-2000)}`))));
    child.stdin.end(yaml);
  });
}

/** One side's first apply into a fresh namespace on a freshly started controller, measured; the namespace is kept. */
export async function firstApply(side: Side, ns: string, scale: number, key: string): Promise<First> {
  const { nets, keys } = shape(scale);
  const n = nets * 4 + keys * 2;
  await side.start([ns]);
  // As the OCI rows: each side starts once the cores were calm (≤ 25 % busy over a second, at most 2 min), so neither
  // inherits the work on the round before's objects (the first apply right after a clean-up ran 33 s at load 4.2, the others 27).
  const busy = await waitForCalm(maxBusy, 120_000);
  const pid = side.pid();
  const [cpu0, api0, load0, startRss] = [processCpuSeconds(pid), await side.apiRequests(), loadavg()[0]!, rssMiB(pid)];
  let machine = '';
  const m = await measureRequests(
    async () => {
      const from = Date.now();
      const cpuFrom = cpuSnapshot();
      await kubectlApply(side.manifests(ns, scale, key));
      await until(`${side.label}: ${n} objects Ready in ${ns}`, async () => (await side.ready(ns)) === n, 1_800_000, 1_000);
      const to = Date.now();
      const named = new Map([[pid, `${side.label} controller`], [process.pid, 'bench process']]);
      machine = describeCpu(cpuByComponent(cpuFrom, cpuSnapshot(), named), (to - from) / 1000, cpus().length);
      return { from, to };
    },
    (v) => requestsOfUser(side.user.id, v.from - 500, v.to + 1_500).ids,
  );
  const { from, to } = m.value;
  const first: First = {
    seconds: (to - from) / 1000,
    cpu: m.own,
    requests: m.requests,
    byMethod: requestsOfUser(side.user.id, from - 500, to + 1_500).byMethod,
    apiServer: (await side.apiRequests()) - api0,
    controllerCpu: processCpuSeconds(pid) - cpu0,
    peakRss: peakRssMiB(pid),
    startRss,
    busy,
    load: (load0 + loadavg()[0]!) / 2,
    machine,
  };
  process.stderr.write(`[bench] orc: ${side.label} round in ${ns}: ${JSON.stringify({ ...first, byMethod: methods(first.byMethod) })}\n`);
  return first;
}

/** One row from both sides' rounds: medians, spreads, the ratio ours ÷ ORC's against `max`. */
export function pairRow(name: string, ours: number[], theirs: number[], unit: string, digits: number, max: number, extra: { ours?: string; peer?: string } = {}): BenchRow {
  const [o, t] = [median(ours), median(theirs)];
  const ratio = o / t;
  return {
    name,
    ours: `${o.toFixed(digits)} ${unit} (spread ${spread(ours, digits)}), ${ratio.toFixed(2)}× ORC${extra.ours ? `; ${extra.ours}` : ''}`,
    peer: `ORC ${t.toFixed(digits)} ${unit} (spread ${spread(theirs, digits)})${extra.peer ? `; ${extra.peer}` : ''}`,
    goal: `≤ ${max}× ORC`,
    met: ratio <= max,
  };
}

export function firstRows(n: number, ours: First[], theirs: First[], source: string): BenchRow[] {
  const load = (fs: First[]): string => `load ${spread(fs.map((f) => f.load), 1)}, cores ${spread(fs.map((f) => f.busy * 100), 0)} % busy before`;
  const col = (fs: First[], k: keyof Omit<First, 'byMethod' | 'machine'>): number[] => fs.map((f) => f[k]);
  const sumMethods = (fs: First[]): string => {
    const mid = fs[Math.floor(fs.length / 2)]!;
    return `${mid.requests} requests: ${methods(mid.byMethod)}`;
  };
  const what = `beside ORC, ${n} objects, ${ours.length} interleaved rounds`;
  // The round whose time is the median: where the machine's CPU went while it ran (the bed's 2 cores bound both sides).
  const mid = (fs: First[]): First => [...fs].sort((a, b) => a.seconds - b.seconds)[Math.floor((fs.length - 1) / 2)]!;
  const profile = (fs: First[]): string => `${load(fs)}; CPU in the median round: ${mid(fs).machine}`;
  const started = (fs: First[]): string => `started at ${median(col(fs, 'startRss')).toFixed(0)} MiB`;
  return [
    pairRow(`beside ORC (${source}), ${n} objects, ${ours.length} interleaved rounds: kubectl apply → every object Ready`, col(ours, 'seconds'), col(theirs, 'seconds'), 's', 1, 0.5, { ours: profile(ours), peer: profile(theirs) }),
    pairRow(`${what}: OpenStack CPU of the first apply (its own requests, Neutron + Nova API workers)`, col(ours, 'cpu'), col(theirs, 'cpu'), 'CPU-s', 1, 0.7, { ours: sumMethods(ours), peer: sumMethods(theirs) }),
    pairRow(`${what}: OpenStack requests of the first apply (Neutron + Nova, by the side's Keystone user)`, col(ours, 'requests'), col(theirs, 'requests'), 'requests', 0, 1),
    pairRow(`${what}: API-server requests of the first apply (the controller's own count)`, col(ours, 'apiServer'), col(theirs, 'apiServer'), 'requests', 0, 1),
    pairRow(`${what}: controller CPU during the first apply (host process, /proc)`, col(ours, 'controllerCpu'), col(theirs, 'controllerCpu'), 'CPU-s', 1, 1),
    pairRow(`${what}: controller peak RSS (VmHWM, process started for the round)`, col(ours, 'peakRss'), col(theirs, 'peakRss'), 'MiB', 0, 1, { ours: started(ours), peer: started(theirs) }),
  ];
}

const neutronLog = join(testbedHome, 'openstack', 'log', 'neutron-server.log');
const neutronLine = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3}) .*"POST \/v2\.0\/networks /;

/** When Neutron answered the first network POST of `userId` logged after byte `offset` (epoch ms), or undefined yet. */
export function firstNetworkPost(userId: string, offset: number): number | undefined {
  const size = statSync(neutronLog).size;
  if (size <= offset) return undefined;
  const fd = openSync(neutronLog, 'r');
  const buf = Buffer.alloc(size - offset);
  try {
    readSync(fd, buf, 0, buf.length, offset);
  } finally {
    closeSync(fd);
  }
  for (const text of buf.toString('utf8').split('\n')) {
    if (!text.includes(userId)) continue;
    const m = neutronLine.exec(text);
    if (m) return new Date(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!).getTime();
  }
  return undefined;
}

// Seven each: at three, ORC spread 0.27–0.33 s around a median of 0.28 s and ours 0.28–0.30 around 0.29: one slow POST decided the row.
const changes = 7;

/** `kubectl apply` of one more Network into a namespace of N Ready objects → Neutron answered the side's POST, `changes` times each, interleaved. */
export async function oneChange(sides: [Side, string][], n: number): Promise<BenchRow> {
  const ms = new Map<Side, number[]>(sides.map(([s]) => [s, []]));
  const load0 = loadavg()[0]!;
  for (let i = 0; i < changes; i++) {
    for (const [side, ns] of i % 2 ? [...sides].reverse() : sides) {
      const offset = statSync(neutronLog).size;
      const doc = side.label === 'ORC'
        ? `apiVersion: openstack.k-orc.cloud/v1alpha1\nkind: Network\nmetadata: {name: change-${i}, namespace: ${ns}}\nspec:\n  cloudCredentialsRef: {cloudName: bench, secretName: orc-clouds}\n  managementPolicy: managed\n  resource: {name: ${ns}-change-${i}, mtu: 1400}\n`
        : `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: change-${i}, namespace: ${ns}}\nspec: {mtu: 1400}\n`;
      const t0 = Date.now();
      await kubectlApply(doc);
      let at: number | undefined;
      await until(`${side.label}: change-${i} written`, () => Promise.resolve((at = firstNetworkPost(side.user.id, offset)) !== undefined), 300_000, 50);
      ms.get(side)!.push(at! - t0);
      await until(`${side.label}: change-${i} Ready`, async () => (await side.ready(ns)) === n + i + 1, 300_000, 500);
    }
  }
  const [ours, theirs] = [ms.get(sides[0]![0])!, ms.get(sides[1]![0])!];
  return pairRow(`beside ORC: kubectl apply of one Network into a namespace of ${n} Ready → Neutron answered its POST, ${changes} each, interleaved`, ours.map((x) => x / 1000), theirs.map((x) => x / 1000), 's', 2, 1, { ours: `load ${load0.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}` });
}


/** Drops the Networks oneChange added (the controllers delete them in OpenStack), until `n` objects are left Ready. */
export async function dropChanges(sides: [Side, string][], n: number): Promise<void> {
  for (const [side, ns] of sides) {
    const kind = side.label === 'ORC' ? 'networks.openstack.k-orc.cloud' : 'networks.kupenstack.io';
    kubectlOk(['delete', kind, '-n', ns, ...Array.from({ length: changes }, (_, i) => `change-${i}`), '--wait=false']);
  }
  for (const [side, ns] of sides) await until(`${side.label}: the change Networks gone`, async () => (await side.ready(ns)) === n && (await side.count(ns)) === n, 300_000, 1_000);
}

export interface NoopSettings {
  seconds: number;
  resyncSeconds: number;
  /** ORC's build has spec.resyncPeriod (its periodic drift detection); v2.4.0 has none. */
  orcResync: boolean;
}

/**
 * The no-op: both namespaces of N Ready objects, drift detection switched on both sides at the same period
 * (KupenStack restarted with --resync, ORC's objects re-applied with spec.resyncPeriod), a settling pause, then one
 * window of both side by side; each side's OpenStack requests in it by its Keystone user, scaled to an hour.
 */
export async function noop(sides: [Side, string][], n: number, scale: number, key: string, s: NoopSettings): Promise<BenchRow> {
  for (const [side, ns] of sides) {
    if (side.label !== 'ORC') await side.restart({ resyncSeconds: s.resyncSeconds });
    else if (s.orcResync) await kubectlApply(side.manifests(ns, scale, key, { resyncSeconds: s.resyncSeconds }));
  }
  for (const [side, ns] of sides) await until(`${side.label}: ${n} Ready again`, async () => (await side.ready(ns)) === n, 600_000, 1_000);
  // The restart's first run and ORC's reconcile of the re-applied objects finish before the window opens.
  await sleep(Math.min(s.resyncSeconds, 30) * 1000);
  const from = Date.now();
  const load0 = loadavg()[0]!;
  await sleep(s.seconds * 1000);
  const to = Date.now();
  await sleep(1_500);
  const perHour = 3600 / s.seconds;
  const counts = sides.map(([side]) => {
    const by = requestsOfUser(side.user.id, from, to).byMethod;
    const all = [...by.values()].reduce((a, b) => a + b, 0);
    const reads = [...by].filter(([k]) => k.endsWith(' GET')).reduce((a, [, v]) => a + v, 0);
    return { reads, writes: all - reads, hour: reads * perHour };
  });
  const [o, t] = [counts[0]!, counts[1]!];
  const window = `${s.seconds} s window ×${perHour.toFixed(0)}, drift detection every ${s.resyncSeconds} s`;
  return {
    name: `beside ORC: no-op, ${n} objects Ready, OpenStack reads per hour (${window}; load ${load0.toFixed(1)} → ${loadavg()[0]!.toFixed(1)})`,
    ours: `${o.hour.toFixed(0)} reads/h (${o.reads} in the window, ${o.writes} writes), ${t.hour ? (o.hour / t.hour).toFixed(3) : '∞'}× ORC; default --resync 5m`,
    peer: s.orcResync
      ? `ORC ${t.hour.toFixed(0)} reads/h (${t.reads} in the window, ${t.writes} writes) with spec.resyncPeriod ${s.resyncSeconds}s; default: no resync (drift never seen)`
      : `ORC ${t.hour.toFixed(0)} reads/h (${t.reads} in the window): this build has no resyncPeriod, so no drift detection to compare with`,
    goal: '≤ 0.1× ORC with drift detection on both',
    met: s.orcResync && o.writes === 0 && o.hour <= 0.1 * t.hour,
  };
}

/** Objects beyond one per name in a project (networks, subnets, ports, security groups): what a crashed create left twice. */
export async function duplicates(cloud: OpenStackCloud, projectName: string): Promise<number> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: projectName });
  if (!p) return 0;
  const network = cloud.client('network');
  let extra = 0;
  for (const [path, key] of [['/networks', 'networks'], ['/subnets', 'subnets'], ['/ports', 'ports'], ['/security-groups', 'security_groups']] as const) {
    const names = (await network.list<{ name: string }>(path, key, { project_id: p.id })).map((x) => x.name).filter((x) => x !== '' && x !== 'default');
    extra += names.length - new Set(names).size;
  }
  return extra;
}

export interface Recovery {
  duplicates: number;
  ready: number;
  seconds: number;
}

/**
 * kill -9 of the side's controller half-way through a first apply (once half its objects are Ready: a time taken from
 * earlier rounds missed the middle when the load changed), started again at once; duplicates once all is Ready (or after 15 min).
 */
export async function killRecovery(side: Side, ns: string, scale: number, key: string, cloud: OpenStackCloud): Promise<Recovery> {
  const { nets, keys } = shape(scale);
  const n = nets * 4 + keys * 2;
  await side.start([ns]);
  await kubectlApply(side.manifests(ns, scale, key));
  await until(`${side.label}: half of ${n} Ready`, async () => (await side.ready(ns)) >= n / 2, 1_800_000, 250);
  await side.kill9();
  const t0 = Date.now();
  await side.restart();
  await until(`${side.label}: ${n} Ready after kill -9`, async () => (await side.ready(ns)) === n, 900_000, 1_000).catch((err: unknown) => {
    process.stderr.write(`[bench] orc: ${side.label} after kill -9: ${String(err)}\n`);
  });
  return { duplicates: await duplicates(cloud, side.project(ns)), ready: await side.ready(ns), seconds: (Date.now() - t0) / 1000 };
}
