import { execFileSync, fork, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { agentFlags } from '../support/agent-flags.ts';
import type { ScaleRun, ScaleRunResult } from './scale-agent.ts';
import type { BenchRow } from './table.ts';

const cloudName = 'kupenstack-local';

/**
 * Per namespace, within Neutron's, Cinder's and Nova's default quotas (10
 * security groups with the default one, 10 volumes, 10 instances): `units`
 * networks, subnets and ports, `groups` security groups with one rule each,
 * `volumes` fake-driver volumes, and `vms` fake-driver VMs with the image
 * and flavor they boot from. The default 100 namespaces × 100 resources =
 * 10 000, of which 100 VMs and 200 volumes.
 */
interface Shape {
  namespaces: number;
  units: number;
  groups: number;
  volumes: number;
  vms: number;
}

/** A namespace with VMs also declares the Image and Flavor they boot from. */
const computeOf = (vms: number): number => (vms > 0 ? vms + 2 : 0);

function shapeOf(perNamespace: number, namespaces: number, volumes: number, vms: number): Shape {
  const groups = Math.min(8, Math.max(1, Math.round(perNamespace * 0.08)));
  const units = Math.max(1, Math.floor((perNamespace - groups - volumes - computeOf(vms)) / 3));
  return { namespaces, units, groups, volumes, vms };
}

const resourcesOf = (s: Shape): number => s.namespaces * (s.units * 3 + s.groups + s.volumes + computeOf(s.vms));

/** `mtu` of the changed networks: the 1 % change is one network per namespace. */
function manifests(ns: string, s: Shape, changed: boolean, imageUrl: string): string {
  const h = (kind: string, name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n`;
  const docs: string[] = [];
  for (let i = 0; i < s.groups; i++) docs.push(`${h('SecurityGroup', `sg-${i}`)}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 10.0.0.0/8}\n`);
  for (let i = 0; i < s.units; i++) {
    docs.push(`${h('Network', `net-${i}`)}  mtu: ${changed && i === 0 ? 1300 : 1400}\n`);
    docs.push(`${h('Subnet', `sub-${i}`)}  networkRef: {name: net-${i}}\n  cidr: 10.${i % 250}.${Math.floor(i / 250)}.0/24\n  enableDHCP: false\n`);
    docs.push(`${h('Port', `port-${i}`)}  networkRef: {name: net-${i}}\n  securityGroupRefs: [{name: sg-${i % s.groups}}]\n`);
  }
  for (let i = 0; i < s.volumes; i++) docs.push(`${h('Volume', `vol-${i}`)}  size: 1\n`);
  if (s.vms > 0) {
    docs.push(`${h('Image', 'disk')}  diskFormat: raw\n  source:\n    url: {url: "${imageUrl}"}\n`);
    docs.push(`${h('Flavor', 'tiny')}  vcpus: 1\n  ram: 64\n  disk: 1\n`);
  }
  for (let i = 0; i < s.vms; i++) docs.push(`${h('VirtualMachine', `vm-${i}`)}  flavorRef: {name: tiny}\n  imageRef: {name: disk}\n  networks: [{networkRef: {name: net-${i % s.units}}}]\n`);
  return docs.join('---\n');
}

/** Read calls per API collection (`network GET /ports`), what a no-op's cost is made of. */
function readsByCollection(byCollection: Record<string, number>): string {
  return Object.entries(byCollection)
    .filter(([k]) => / (GET|HEAD) /.test(k))
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
}

/** The agent in its own process, with the product's Node flags; runs are sent to it one at a time. */
class Agent {
  readonly flags = agentFlags();
  readonly #child: ChildProcess = fork(new URL('./scale-agent.ts', import.meta.url), [], { execArgv: this.flags, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });

  run(job: ScaleRun): Promise<ScaleRunResult> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`the bench's agent process exited (${code}) during a run`));
      this.#child.once('exit', onExit);
      this.#child.once('message', (m: { result?: ScaleRunResult; error?: string }) => {
        this.#child.off('exit', onExit);
        if (m.result) resolve(m.result);
        else reject(new Error(`the bench's agent process failed: ${m.error ?? 'no answer'}`));
      });
      this.#child.send(job);
    });
  }

  stop(): void {
    this.#child.kill();
  }
}

/** The openstack CLI creating `n` networks in one project, one after the other: its networks per second. */
function cliNetworksPerSecond(project: string, n: number): number {
  execFileSync('openstack', ['--os-cloud', cloudName, 'project', 'create', '--or-show', project], { stdio: 'ignore' });
  const t0 = performance.now();
  const out = spawnSync('bash', ['-c', `set -e; for i in $(seq 1 ${n}); do openstack network create --project ${project} --mtu 1400 cli-net-$i >/dev/null; done`], { env: { ...process.env, OS_CLOUD: cloudName }, encoding: 'utf8' });
  const seconds = (performance.now() - t0) / 1000;
  if (out.status !== 0) throw new Error(`the CLI failed: ${out.stderr.slice(-500)}`);
  return n / seconds;
}

/**
 * `BENCH_ONLY=scale`: many namespaces (BENCH_SCALE_NAMESPACES, default 100)
 * of BENCH_SCALE_PER_NAMESPACE resources (default 100): first apply, no-op
 * apply with its read calls per collection (they must not grow with the
 * number of projects), a 1 % change; peak RSS of the agent (this process).
 */
export async function benchScale(): Promise<BenchRow[]> {
  const namespaces = Number(process.env.BENCH_SCALE_NAMESPACES ?? '100');
  const s = shapeOf(Number(process.env.BENCH_SCALE_PER_NAMESPACE ?? '100'), namespaces, Number(process.env.BENCH_SCALE_VOLUMES ?? '2'), Number(process.env.BENCH_SCALE_VMS ?? '1'));
  // The VMs' disk: 64 KiB of zeros over loopback, one Glance image per namespace.
  const disk = createServer((_req, res) => res.end(Buffer.alloc(64 * 1024)));
  await new Promise<void>((resolve) => disk.listen(0, '127.0.0.1', resolve));
  const address = disk.address();
  const imageUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/disk.raw`;
  const total = resourcesOf(s);
  // BENCH_SCALE_OWNER reuses the objects a run kept (BENCH_SCALE_KEEP=1): a no-op measured again on a quieter bed, say.
  const reused = process.env.BENCH_SCALE_OWNER;
  const keep = process.env.BENCH_SCALE_KEEP === '1';
  const owner = reused ?? `scale${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'ks-bench-scale-'));
  const repo = join(dir, 'repo');
  const write = (changed: boolean): void => {
    rmSync(repo, { recursive: true, force: true });
    mkdirSync(repo);
    for (let n = 0; n < namespaces; n++) writeFileSync(join(repo, `ns-${n}.yaml`), manifests(`ns-${n}`, s, changed, imageUrl));
  };
  const config = { ...defaultConfig, owner, projectPrefix: `${owner}-`, stateDir: join(dir, 'state'), concurrency: Number(process.env.BENCH_SCALE_CONCURRENCY ?? '16') };
  const cloud = OpenStackCloud.fromCloudsYaml(cloudName);
  const agent = new Agent();
  const send = (prune: boolean, allowMassDelete: boolean): Promise<ScaleRunResult> => agent.run({ path: repo, cloud: cloudName, config, prune, allowMassDelete });
  const apply = async (prune: boolean, allowMassDelete = false): Promise<ScaleRunResult> => {
    const r = await send(prune, allowMassDelete);
    if (r.errors.length) throw new Error(`apply failed: ${r.errors.slice(0, 5).join('; ')}`);
    return r;
  };
  /**
   * The first apply as the agent makes it: a create whose answer never came in time (an
   * overloaded Nova or Cinder) is not sent again in that run but adopted or made by the
   * next, so the time is until a run ends without errors (at most 3 runs); any other error fails.
   */
  const converge = async (): Promise<{ runs: ScaleRunResult[]; seconds: number; lost: number }> => {
    const runs: ScaleRunResult[] = [];
    for (;;) {
      const r = await send(true, false);
      runs.push(r);
      if (r.errors.length === 0) break;
      if (runs.length === 3 || r.codes.some((c) => c !== 'openstack.unreachable')) throw new Error(`apply failed (run ${runs.length}): ${r.errors.slice(0, 5).join('; ')}`);
    }
    return { runs, seconds: runs.reduce((n, r) => n + r.seconds, 0), lost: runs.reduce((n, r) => n + r.errors.length, 0) };
  };
  const rows: BenchRow[] = [];
  const cliProject = `${owner}-cli`;
  try {
    write(false);
    const first = await converge();
    const rate = total / first.seconds;
    const writes = first.runs.reduce((n, r) => n + r.writes, 0);
    const runs = first.runs.length === 1 ? '' : `, converged in ${first.runs.length} runs (${first.runs.map((r) => `${r.seconds.toFixed(0)} s`).join(' + ')}; ${first.lost} answers lost to timeouts, adopted or made by the next run)`;
    const cliRate = cliNetworksPerSecond(cliProject, 20);
    const noop = await apply(true);
    const noopReads = readsByCollection(noop.byCollection);
    write(true);
    const change = await apply(true);
    const rss = Math.max(...first.runs.map((r) => r.rssMb), noop.rssMb, change.rssMb);
    const label = `${total} resources in ${namespaces} namespaces`;
    rows.push(
      { name: `scale: first apply${reused ? ` (owner ${owner} reused: only what was missing created)` : ''}, ${label}`, ours: `${first.seconds.toFixed(0)} s, ${rate.toFixed(1)} resources/s (${writes} writes${runs})`, peer: `openstack CLI: ${cliRate.toFixed(2)} networks/s, one at a time`, goal: '≥ 1× the CLI\'s rate', met: rate >= cliRate },
      { name: `scale: no-op apply, ${label}`, ours: `${noop.seconds.toFixed(1)} s, ${noop.reads} reads, ${noop.writes} writes`, peer: `per kind: ${noopReads}`, goal: '≤ 20 s, 0 writes', met: noop.seconds <= 20 && noop.writes === 0 },
      { name: `scale: 1 % change (${namespaces} networks' mtu), ${label}`, ours: `${change.seconds.toFixed(1)} s, ${change.updated} updated, ${change.writes} writes`, peer: `${change.reads} reads`, goal: `${namespaces} updated, ${namespaces} writes`, met: change.updated === namespaces && change.writes === namespaces },
      { name: `scale: peak RSS of the agent process (node ${agent.flags.join(' ')}), ${label}`, ours: `${rss.toFixed(0)} MB`, peer: 'none', goal: '≤ 300 MB', met: rss <= 300 },
    );
  } finally {
    agent.stop();
    if (keep) console.error(`scale bench: kept owner ${owner} (BENCH_SCALE_OWNER=${owner} measures it again; BENCH_SCALE_KEEP unset then removes it)`);
    else await removeAll();
    rmSync(dir, { recursive: true, force: true });
    disk.close();
  }
  return rows;

  async function removeAll(): Promise<void> {
    rmSync(repo, { recursive: true, force: true });
    mkdirSync(repo);
    await applyPath({ path: repo, cloud: cloudName, config, prune: true, allowMassDelete: true, log: () => undefined }).catch((err: unknown) => console.error(`scale bench cleanup: ${String(err)}`));
    for (const p of await ownedProjects(cloud, owner)) await cloud.identity.remove(`/projects/${p.id}`);
    spawnSync('openstack', ['--os-cloud', cloudName, 'project', 'purge', '--project', cliProject], { stdio: 'ignore' });
  }
}
