import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { measured, measuredAsync, tofuPeer } from './opentofu.ts';
import type { BenchRow } from './table.ts';

/*
 * Issue 32's bench: the first apply of BENCH_LB_COUNT (default 20) load
 * balancers beside OpenTofu's openstack_lb_* resources on the same cloud (the
 * bed's Octavia with its no-op drivers: the API, database and worker flows
 * are real, no amphora boots). Each side has, in a project of its own, one
 * network and subnet and, per load balancer (VIP on the subnet), a listener on
 * :80, a pool, two members and an HTTP monitor. Then a no-op, then tofu
 * destroy beside our prune.
 * The provider's openstack_lb_loadbalancer_v2 cannot run on the no-op network
 * driver: after each create and read it GETs the VIP port, which that driver
 * never makes in Neutron (404), and a given vip_port_id is refused by Octavia
 * (the driver's port has no fixed IP). So tofu's side gets its load balancers
 * from the bench (one POST each, as ours makes them, all at once, then polled
 * until ACTIVE), timed and counted as tofu's, and tofu makes every child with
 * openstack_lb_listener_v2, _pool_v2, _member_v2 and _monitor_v2.
 */

const cloudName = 'kupenstack-local';
const octaviaPort = ':9876/';

/** One side's OpenStack calls: all of them, and Octavia's writes and reads. */
interface Calls {
  total: number;
  octaviaWrites: number;
  octaviaReads: number;
}

const isRead = (method: string): boolean => method === 'GET' || method === 'HEAD';

function describeCalls(c: Calls): string {
  return `${c.total} OpenStack calls (Octavia ${c.octaviaWrites} writes, ${c.octaviaReads} reads)`;
}

/** A client of the bench's cloud that counts every request it sends, Octavia's apart. */
function counting(calls: Calls): OpenStackCloud {
  const cloud = OpenStackCloud.fromCloudsYaml(cloudName);
  const transport = cloud.session.transport;
  const send = transport.send.bind(transport);
  transport.send = async (req) => {
    calls.total++;
    if (req.url.includes(octaviaPort)) {
      if (isRead(req.method)) calls.octaviaReads++;
      else calls.octaviaWrites++;
    }
    return send(req);
  };
  return cloud;
}

/** tofu's calls, from its debug log: the provider logs each request it sends as "OpenStack Request URL: METHOD url". */
export function tofuCalls(log: string): Calls {
  const calls: Calls = { total: 0, octaviaWrites: 0, octaviaReads: 0 };
  for (const m of log.matchAll(/OpenStack Request URL: ([A-Z]+) (\S+)/g)) {
    calls.total++;
    if (m[2]!.includes(octaviaPort)) {
      if (isRead(m[1]!)) calls.octaviaReads++;
      else calls.octaviaWrites++;
    }
  }
  return calls;
}

const cidr = '10.77.0.0/24';
const members = ['10.77.0.10', '10.77.0.11'];

/** The manifests: one network, one subnet, `n` load balancers. */
export function lbManifests(ns: string, n: number): string {
  const h = (kind: string, name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n`;
  const docs = [`${h('Network', 'lb-net')}  mtu: 1400\n`, `${h('Subnet', 'lb-sub')}  networkRef: {name: lb-net}\n  cidr: ${cidr}\n`];
  for (let i = 0; i < n; i++) {
    docs.push(
      `${h('LoadBalancer', `lb-${i}`)}  vip: {subnetRef: {name: lb-sub}}\n  listeners:\n    - name: http\n      protocol: HTTP\n      port: 80\n      pool:\n        lbAlgorithm: ROUND_ROBIN\n        members:\n` +
        members.map((a) => `          - {address: ${a}, port: 8080, subnetRef: {name: lb-sub}}\n`).join('') +
        `        healthMonitor: {type: HTTP, delay: 5, timeout: 3, maxRetries: 3, urlPath: /}\n`,
    );
  }
  return docs.join('---\n');
}

/** The children as HCL, on the load balancers `lbs` (ids, in order) the bench made in tofu's project, on `subnetId`. */
export function lbHcl(lbs: readonly string[], subnetId: string): string {
  const out = [
    `terraform {\n  required_providers {\n    openstack = { source = "terraform-provider-openstack/openstack", version = "3.4.0" }\n  }\n}`,
    `provider "openstack" {\n  cloud = "${cloudName}"\n}`,
  ];
  lbs.forEach((id, i) => {
    out.push(`resource "openstack_lb_listener_v2" "listener_${i}" {\n  name = "http"\n  protocol = "HTTP"\n  protocol_port = 80\n  loadbalancer_id = "${id}"\n}`);
    out.push(`resource "openstack_lb_pool_v2" "pool_${i}" {\n  name = "http"\n  protocol = "HTTP"\n  lb_method = "ROUND_ROBIN"\n  listener_id = openstack_lb_listener_v2.listener_${i}.id\n}`);
    members.forEach((a, j) =>
      out.push(`resource "openstack_lb_member_v2" "member_${i}_${j}" {\n  pool_id = openstack_lb_pool_v2.pool_${i}.id\n  address = "${a}"\n  protocol_port = 8080\n  subnet_id = "${subnetId}"\n}`),
    );
    out.push(`resource "openstack_lb_monitor_v2" "monitor_${i}" {\n  name = "http"\n  pool_id = openstack_lb_pool_v2.pool_${i}.id\n  type = "HTTP"\n  delay = 5\n  timeout = 3\n  max_retries = 3\n  url_path = "/"\n}`);
  });
  return `${out.join('\n\n')}\n`;
}

/** Tofu's project, network and subnet (setup, not timed). */
async function tofuProjectOf(cloud: OpenStackCloud, name: string): Promise<{ projectId: string; subnetId: string }> {
  const project = await cloud.identity.post<{ project: { id: string } }>('/projects', { project: { name, domain_id: 'default' } });
  const projectId = project.project.id;
  const network = cloud.client('network');
  const net = await network.post<{ network: { id: string } }>('/networks', { network: { name: 'lb-net', mtu: 1400, project_id: projectId } });
  const sub = await network.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'lb-sub', network_id: net.network.id, cidr, ip_version: 4, project_id: projectId } });
  return { projectId, subnetId: sub.subnet.id };
}

/** The load balancers of tofu's side: one POST each, all at once, then one list a second until every one is ACTIVE. */
async function tofuLoadBalancers(cloud: OpenStackCloud, projectId: string, subnetId: string, n: number): Promise<string[]> {
  const api = cloud.client('load-balancer');
  const ids = await Promise.all(
    Array.from({ length: n }, async (_, i) => (await api.post<{ loadbalancer: { id: string } }>('/lbaas/loadbalancers', { loadbalancer: { name: `lb-${i}`, vip_subnet_id: subnetId, project_id: projectId } })).loadbalancer.id),
  );
  for (const deadline = Date.now() + 900_000; ; await sleep(1_000)) {
    const lbs = await api.list<{ id: string; provisioning_status: string }>('/lbaas/loadbalancers', 'loadbalancers', { project_id: projectId });
    const bad = lbs.find((l) => l.provisioning_status === 'ERROR');
    if (bad) throw new Error(`tofu's load balancer ${bad.id} went to ERROR`);
    if (lbs.filter((l) => l.provisioning_status === 'ACTIVE').length === n) return ids;
    if (Date.now() > deadline) throw new Error(`tofu's ${n} load balancers were not ACTIVE after 15 minutes`);
  }
}

/** The rest of tofu's destroy: the bench's load balancers (their children gone with tofu destroy), one DELETE each, polled until gone. */
async function deleteTofuLoadBalancers(cloud: OpenStackCloud, projectId: string): Promise<void> {
  const api = cloud.client('load-balancer');
  const lbs = await api.list<{ id: string }>('/lbaas/loadbalancers', 'loadbalancers', { project_id: projectId });
  await Promise.all(lbs.map((lb) => api.remove(`/lbaas/loadbalancers/${lb.id}`)));
  for (const deadline = Date.now() + 900_000; (await api.list('/lbaas/loadbalancers', 'loadbalancers', { project_id: projectId })).length > 0; await sleep(1_000)) {
    if (Date.now() > deadline) throw new Error("tofu's load balancers were not gone 15 minutes after their delete");
  }
}

/** Octavia API + worker CPU seconds of a measured run (gross: everyone's requests in those minutes). */
function octaviaCpu(byService: ReadonlyMap<string, number>): string {
  const api = byService.get('octavia-api') ?? 0;
  const worker = byService.get('octavia-worker') ?? 0;
  return `Octavia API ${api.toFixed(1)} + worker ${worker.toFixed(1)} CPU-s gross`;
}

/** What Octavia holds in a project, counted, for the check that both sides made the same. */
async function octaviaCounts(cloud: OpenStackCloud, projectId: string): Promise<string> {
  const api = cloud.client('load-balancer');
  const counts = await Promise.all(['loadbalancers', 'listeners', 'pools', 'healthmonitors'].map(async (c) => (await api.list<{ provisioning_status: string }>(`/lbaas/${c}`, c, { project_id: projectId })).filter((o) => o.provisioning_status === 'ACTIVE').length));
  const pools = await api.list<{ id: string }>('/lbaas/pools', 'pools', { project_id: projectId });
  const m = (await Promise.all(pools.map((p) => api.list<{ provisioning_status: string }>(`/lbaas/pools/${p.id}/members`, 'members')))).flat().filter((x) => x.provisioning_status === 'ACTIVE').length;
  return `${counts[0]} LB / ${counts[1]} listeners / ${counts[2]} pools / ${m} members / ${counts[3]} monitors ACTIVE`;
}

async function projectIdOf(cloud: OpenStackCloud, name: string): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name });
  return p?.id;
}

/** Deletes whatever tofu left in its project (cascade), then the project's network objects and the project. */
async function purgeTofuProject(cloud: OpenStackCloud, name: string): Promise<void> {
  const id = await projectIdOf(cloud, name);
  if (!id) return;
  const lbs = cloud.client('load-balancer');
  for (const lb of await lbs.list<{ id: string; provisioning_status: string }>('/lbaas/loadbalancers', 'loadbalancers', { project_id: id })) {
    if (lb.provisioning_status !== 'PENDING_DELETE') await lbs.call('DELETE', `/lbaas/loadbalancers/${lb.id}`, { query: { cascade: 'true' } }).catch(() => undefined);
  }
  for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(2_000)) {
    if ((await lbs.list('/lbaas/loadbalancers', 'loadbalancers', { project_id: id })).length === 0) break;
  }
  const network = cloud.client('network');
  for (const s of await network.list<{ id: string }>('/subnets', 'subnets', { project_id: id })) await network.remove(`/subnets/${s.id}`).catch(() => undefined);
  for (const n of await network.list<{ id: string }>('/networks', 'networks', { project_id: id })) await network.remove(`/networks/${n.id}`).catch(() => undefined);
  for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: id })) await network.remove(`/security-groups/${g.id}`).catch(() => undefined);
  await cloud.identity.remove(`/projects/${id}`).catch(() => undefined);
}

export async function benchLoadBalancers(): Promise<BenchRow[]> {
  const n = Number(process.env.BENCH_LB_COUNT ?? 20);
  const dir = mkdtempSync(join(tmpdir(), 'ks-bench-lb-'));
  const owner = `l${randomBytes(3).toString('hex')}`;
  const tofuProject = `${owner}-lb-hcl`;
  const cloud = OpenStackCloud.fromCloudsYaml(cloudName);
  const { tofu } = tofuPeer(dir);
  const ours = (repo: string, openstack: OpenStackCloud) =>
    applyPath({ path: repo, cloud: cloudName, openstack, config: { ...defaultConfig, owner, projectPrefix: `${owner}-`, stateDir: join(dir, 'state') }, prune: true, allowMassDelete: true, log: () => undefined });
  const rows: BenchRow[] = [];
  try {
    const repo = join(dir, 'repo');
    mkdirSync(repo);
    writeFileSync(join(repo, 'all.yaml'), lbManifests('lb-bench', n));
    const { projectId: tofuProjectId, subnetId } = await tofuProjectOf(cloud, tofuProject);
    const hcl = join(dir, 'hcl');
    mkdirSync(hcl);
    writeFileSync(join(hcl, 'main.tf'), lbHcl([], subnetId));
    const init = tofu(hcl, ['init', '-input=false', '-no-color']);
    if (init.status !== 0) throw new Error(`tofu init failed: ${init.out.slice(-800)}`);

    // First apply, tofu's side then ours (one at a time: the two share the bed's one Octavia worker).
    const tCalls: Calls = { total: 0, octaviaWrites: 0, octaviaReads: 0 };
    const tLbs = await measuredAsync(() => tofuLoadBalancers(counting(tCalls), tofuProjectId, subnetId, n));
    writeFileSync(join(hcl, 'main.tf'), lbHcl(tLbs.value, subnetId));
    const tofuLog = join(dir, 'tofu-first.log');
    const tFirst = measured(() => tofu(hcl, ['apply', '-auto-approve', '-input=false', '-no-color'], { TF_LOG: 'DEBUG', TF_LOG_PATH: tofuLog }));
    if (tFirst.value.status !== 0) throw new Error(`tofu apply failed: ${tFirst.value.out.slice(-1500)}`);
    const fromLog = tofuCalls(readFileSync(tofuLog, 'utf8'));
    tCalls.total += fromLog.total;
    tCalls.octaviaWrites += fromLog.octaviaWrites;
    tCalls.octaviaReads += fromLog.octaviaReads;
    const tSeconds = tLbs.seconds + tFirst.seconds;
    const tCpu = new Map([...tFirst.byService].map(([k, v]) => [k, v + (tLbs.byService.get(k) ?? 0)]));
    const oCalls: Calls = { total: 0, octaviaWrites: 0, octaviaReads: 0 };
    const oFirst = await measuredAsync(() => ours(repo, counting(oCalls)));
    const report = oFirst.value.report;
    if (!report || report.errors.length) throw new Error(`our apply failed: ${JSON.stringify(report?.errors.slice(0, 3) ?? oFirst.value.diagnostics.slice(0, 3))}`);
    // Both sides made the same objects, all ACTIVE (else the figures compare different work).
    const [oHeld, tHeld] = [await octaviaCounts(cloud, (await projectIdOf(cloud, `${owner}-lb-bench`))!), await octaviaCounts(cloud, tofuProjectId)];
    if (oHeld !== tHeld) throw new Error(`the two sides hold different objects: ours ${oHeld}, tofu's ${tHeld}`);
    const speed = tSeconds / oFirst.seconds;
    rows.push(
      {
        name: `beside OpenTofu: first apply of ${n} load balancers (listener :80, pool, 2 members, HTTP monitor each; ${oHeld})`,
        ours: `${oFirst.seconds.toFixed(1)} s, ${describeCalls(oCalls)}, ${octaviaCpu(oFirst.byService)}, load ${oFirst.load}; tofu ÷ ours ${speed.toFixed(2)}×`,
        peer: `tofu ${tSeconds.toFixed(1)} s (load balancers by the bench's POSTs ${tLbs.seconds.toFixed(1)} s + tofu apply of the children ${tFirst.seconds.toFixed(1)} s, debug log on), ${describeCalls(tCalls)}, ${octaviaCpu(tCpu)}, load ${tLbs.load} / ${tFirst.load}`,
        goal: 'faster than tofu',
        met: speed > 1,
      },
      {
        name: `beside OpenTofu: Octavia writes of the first apply of ${n} load balancers`,
        ours: `${oCalls.octaviaWrites}`,
        peer: `tofu ${tCalls.octaviaWrites}`,
        goal: '≤ tofu',
        met: oCalls.octaviaWrites <= tCalls.octaviaWrites,
      },
    );

    // No-op: nothing to change on either side.
    const tNoop = tofu(hcl, ['apply', '-auto-approve', '-input=false', '-no-color']);
    const nCalls: Calls = { total: 0, octaviaWrites: 0, octaviaReads: 0 };
    const t0 = performance.now();
    const oNoop = await ours(repo, counting(nCalls));
    const noopSeconds = (performance.now() - t0) / 1000;
    if (!oNoop.report || oNoop.report.errors.length || oNoop.report.created + oNoop.report.updated > 0) throw new Error(`our no-op changed something: ${JSON.stringify(oNoop.report)}`);
    rows.push({
      name: `beside OpenTofu: no-op of ${n} load balancers`,
      ours: `${noopSeconds.toFixed(1)} s, ${describeCalls(nCalls)}`,
      peer: `tofu ${tNoop.seconds.toFixed(1)} s`,
      goal: 'faster than tofu',
      met: noopSeconds < tNoop.seconds,
    });

    // tofu destroy beside our prune of everything.
    const tDestroy = tofu(hcl, ['destroy', '-auto-approve', '-input=false', '-no-color']);
    if (tDestroy.status !== 0) throw new Error(`tofu destroy failed: ${tDestroy.out.slice(-800)}`);
    const d0 = performance.now();
    await deleteTofuLoadBalancers(cloud, tofuProjectId);
    const tDestroySeconds = tDestroy.seconds + (performance.now() - d0) / 1000;
    rmSync(join(repo, 'all.yaml'));
    const p0 = performance.now();
    const oPrune = await ours(repo, cloud);
    const pruneSeconds = (performance.now() - p0) / 1000;
    if (!oPrune.report || oPrune.report.errors.length || oPrune.report.deleted !== n + 2) throw new Error(`our prune did not delete everything: ${JSON.stringify(oPrune.report?.errors.slice(0, 3))} (${oPrune.report?.deleted} deleted)`);
    rows.push({
      name: `beside OpenTofu: prune of ${n} load balancers vs tofu destroy`,
      ours: `${pruneSeconds.toFixed(1)} s (${oPrune.report.deleted} deleted, children first)`,
      peer: `tofu destroy ${tDestroy.seconds.toFixed(1)} s + the bench's load balancer deletes = ${tDestroySeconds.toFixed(1)} s`,
      goal: 'faster than tofu',
      met: pruneSeconds < tDestroySeconds,
    });
  } finally {
    rmSync(join(dir, 'repo'), { recursive: true, force: true });
    mkdirSync(join(dir, 'repo'));
    await ours(join(dir, 'repo'), cloud).catch(() => undefined);
    for (const p of await ownedProjects(cloud, owner)) {
      // Neutron keeps a project's "default" security group after the project is gone.
      for (const g of await cloud.client('network').list<{ id: string }>('/security-groups', 'security_groups', { project_id: p.id })) await cloud.client('network').remove(`/security-groups/${g.id}`).catch(() => undefined);
      await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
    }
    await purgeTofuProject(cloud, tofuProject);
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
