import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { pool } from '../../agent/util/concurrency.ts';
import { agentFlags } from '../support/agent-flags.ts';
import { testCloudName } from '../support/context.ts';
import { renderTable, type BenchRow } from './table.ts';

/**
 * Issue 30: `kupenstack export` of a cloud built without KupenStack, `total`
 * objects in ~100 projects (a tenth networks, a tenth their subnets, a tenth
 * security groups and seven tenths those groups' rules, as a security-minded
 * cloud holds them; Neutron bulk POSTs), run as the user runs it (the CLI in
 * its own process): wall time, calls per collection from its JSON summary
 * (counted at the HTTP layer), peak RSS from the kernel (`/usr/bin/time`).
 * The peer: the `openstack` CLI listing the same kinds cloud-wide, one
 * command per kind, which writes no manifests, no references and no defaults
 * filter. BENCH_EXPORT_SIZES=1000,10000 (the default); a size runs only if the
 * one before it took under 5 minutes to export and list.
 */
const repo = join(import.meta.dirname, '../..');
const projectsPerRun = Number(process.env.BENCH_EXPORT_PROJECTS ?? '100');
// One bulk POST per 100 objects: a busy bed's Neutron took over a minute for 250 networks in one call.
const chunk = 100;
const bulkTimeoutMs = 600_000;
// The rules each group gets (each port a rule), within Neutron's default 100 rules per project at 10 000 objects.
const rulePorts = [22, 80, 443, 5432, 6379, 8080, 9090];

interface Built {
  prefix: string;
  projects: { id: string; name: string }[];
}

/** How many of each kind `total` objects are. */
function shape(total: number): { networks: number; groups: number; rules: number } {
  const networks = Math.floor(total / 10);
  const groups = Math.floor(total / 10);
  return { networks, groups, rules: groups * rulePorts.length };
}

const timed = (cmd: string, args: string[]): Promise<{ ms: number; stdout: string; stderr: string; code: number | null }> =>
  new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: repo, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ ms: performance.now() - t0, stdout, stderr, code }));
  });

/** The fixture, spread over the projects, in bulk POSTs (DHCP off: no port per subnet). */
async function build(cloud: OpenStackCloud, total: number, built: Built): Promise<void> {
  const network = cloud.client('network');
  // Recorded as they come, so a build that fails half-way is still cleaned up.
  await pool(Array.from({ length: projectsPerRun }, (_, i) => i), 8, async (i) => {
    const { project } = await cloud.identity.post<{ project: { id: string; name: string } }>('/projects', { project: { name: `${built.prefix}p${i}`, domain_id: 'default', description: 'export bench' } });
    built.projects.push(project);
  });
  const { networks: nNetworks, groups: nGroups } = shape(total);
  const projectOf = (i: number): string => built.projects[i % built.projects.length]!.id;
  const starts = (n: number): number[] => Array.from({ length: Math.ceil(n / chunk) }, (_, k) => k * chunk);
  // Two chunks at a time: the bed's Neutron has two API workers, and a bulk POST keeps one busy for seconds.
  let done = 0;
  await pool(starts(nNetworks), 2, async (i) => {
    const specs = Array.from({ length: Math.min(chunk, nNetworks - i) }, (_, j) => ({ name: `net-${i + j}`, project_id: projectOf(i + j) }));
    const { networks } = (await network.call<{ networks: { id: string; project_id: string }[] }>('POST', '/networks', { json: { networks: specs }, timeoutMs: bulkTimeoutMs })).body;
    const subnets = networks.map((n, j) => ({ name: `sub-${i + j}`, network_id: n.id, project_id: n.project_id, ip_version: 4, cidr: `10.${(i + j) % 250}.${Math.floor((i + j) / 250) % 250}.0/24`, enable_dhcp: false }));
    await network.call('POST', '/subnets', { json: { subnets }, timeoutMs: bulkTimeoutMs });
    if ((done += networks.length) % 500 === 0) process.stderr.write(`[bench] export fixture: ${done} of ${nNetworks} networks, each with its subnet\n`);
  });
  const groups: { id: string }[] = [];
  await pool(starts(nGroups), 2, async (i) => {
    const specs = Array.from({ length: Math.min(chunk, nGroups - i) }, (_, j) => ({ name: `sg-${i + j}`, project_id: projectOf(i + j), description: 'export bench' }));
    groups.push(...(await network.call<{ security_groups: { id: string }[] }>('POST', '/security-groups', { json: { security_groups: specs }, timeoutMs: bulkTimeoutMs })).body.security_groups);
  });
  process.stderr.write(`[bench] export fixture: ${groups.length} security groups\n`);
  // Neutron takes a bulk of rules for one group only (SecurityGroupNotSingleGroupRules): one POST per group.
  done = 0;
  await pool(groups, 4, async (g) => {
    const rules = rulePorts.map((port) => ({ security_group_id: g.id, direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: port, port_range_max: port, remote_ip_prefix: '10.0.0.0/8' }));
    await network.call('POST', '/security-group-rules', { json: { security_group_rules: rules }, timeoutMs: bulkTimeoutMs });
    if (++done % 250 === 0) process.stderr.write(`[bench] export fixture: rules of ${done} of ${groups.length} groups\n`);
  });
}

async function destroy(cloud: OpenStackCloud, built: Built): Promise<void> {
  const network = cloud.client('network');
  // Each project's networks and groups as Neutron lists them (a bulk POST that timed out may still have made its objects); a network's
  // subnets and a group's rules go with it (no ports: DHCP was off). The project's default group too: Keystone's delete leaves it behind.
  await pool(built.projects, 4, async (p) => {
    for (const n of await network.list<{ id: string }>('/networks', 'networks', { project_id: p.id })) await network.remove(`/networks/${n.id}`);
    for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: p.id, fields: 'id' })) await network.remove(`/security-groups/${g.id}`);
  });
  await pool(built.projects, 8, (p) => cloud.identity.remove(`/projects/${p.id}`));
}

/** The openstack CLI listing every kind the export reads, cloud-wide, one process per kind. */
async function peerListing(): Promise<number> {
  const kinds = ['network list --long', 'subnet list --long', 'port list --long', 'router list --long', 'security group list --all-projects', 'floating ip list --long', 'flavor list --all --long', 'keypair list', 'image list --long', 'volume list --all-projects --long', 'server list --all-projects --long', 'project list'];
  const script = kinds.map((k) => `openstack --os-cloud ${testCloudName} ${k} -f json >/dev/null`).join(' && ');
  const r = await timed('bash', ['-c', `set -e; ${script}`]);
  if (r.code !== 0) throw new Error(`the openstack CLI listing failed: ${r.stderr.slice(-500)}`);
  return r.ms;
}

async function one(cloud: OpenStackCloud, total: number): Promise<{ rows: BenchRow[]; ms: number }> {
  const built: Built = { prefix: `xb${randomBytes(3).toString('hex')}-`, projects: [] };
  const dir = join(mkdtempSync(join(tmpdir(), 'ks-bench-export-')), 'out');
  try {
    const b0 = performance.now();
    await build(cloud, total, built);
    const buildMs = performance.now() - b0;
    const args = [...agentFlags(), join(repo, 'agent/cli/main.ts'), 'export', dir, '--cloud', testCloudName, '--project-prefix', built.prefix, '--output', 'json', ...built.projects.flatMap((p) => ['--project', p.id])];
    // %M: the peak resident set of the export process, in KiB, from the kernel.
    const r = await timed('/usr/bin/time', ['-f', 'maxrss-kib=%M', process.execPath, ...args]);
    if (r.code !== 0) throw new Error(`kupenstack export failed (${r.code}): ${r.stderr.slice(-1000)}`);
    const rssMb = Number(/maxrss-kib=(\d+)/.exec(r.stderr)?.[1]) / 1024;
    const summary = JSON.parse(r.stdout) as { files: string[]; calls: Record<string, number>; namespaces: { manifests: number }[] };
    // What was built came back: every network and subnet is a manifest (read from the files written).
    const written = readdirSync(dir).flatMap((ns) => readdirSync(join(dir, ns)).map((f) => readFileSync(join(dir, ns, f), 'utf8')));
    const count = (pattern: RegExp): number => written.reduce((n, text) => n + (text.match(pattern)?.length ?? 0), 0);
    const want = shape(total);
    const got = { networks: count(/^kind: Network$/gm), subnets: count(/^kind: Subnet$/gm), groups: count(/^kind: SecurityGroup$/gm), rules: count(/^\s*- direction: ingress$/gm) };
    if (got.networks !== want.networks || got.subnets !== want.networks || got.groups !== want.groups || got.rules !== want.rules) {
      throw new Error(`the export wrote ${JSON.stringify(got)}; built: ${want.networks} networks and subnets, ${want.groups} groups, ${want.rules} rules`);
    }
    const calls = Object.entries(summary.calls).map(([k, n]) => `${k.replace(/ GET /, ' ')} ${n}`).join(', ');
    const peer = await peerListing();
    const label = `${total} objects in ${built.projects.length} projects (${want.networks} networks, ${want.networks} subnets, ${want.groups} security groups, ${want.rules} rules)`;
    const rows: BenchRow[] = [
      { name: `export ${label} (CLI process; built in ${(buildMs / 1000).toFixed(1)} s by Neutron bulk POSTs); calls: ${calls}`, ours: `${(r.ms / 1000).toFixed(1)} s`, peer: `${(peer / 1000).toFixed(1)} s openstack CLI listing the 12 kinds cloud-wide`, goal: '≤ 1× the CLI listing', met: r.ms <= peer },
      { name: `export ${label}: peak RSS of the export process`, ours: `${rssMb.toFixed(0)} MB`, peer: 'none', goal: '≤ 300 MB', met: rssMb <= 300 },
    ];
    // Printed now: the cleanup of 10 000 objects takes a quarter of an hour more before the table is printed.
    process.stderr.write(`[bench] export of ${total} objects, before its cleanup:\n${renderTable(rows)}\n`);
    return { ms: buildMs + r.ms + peer, rows };
  } finally {
    rmSync(join(dir, '..'), { recursive: true, force: true });
    await destroy(cloud, built).catch((err: unknown) => console.error(`export bench cleanup (prefix ${built.prefix}): ${String(err)}`));
  }
}

export async function benchExport(): Promise<BenchRow[]> {
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const sizes = (process.env.BENCH_EXPORT_SIZES ?? '1000,10000').split(',').map(Number);
  const rows: BenchRow[] = [];
  for (const total of sizes) {
    const r = await one(cloud, total);
    rows.push(...r.rows);
    if (r.ms > 300_000) {
      console.error(`export bench: ${total} objects took ${(r.ms / 1000).toFixed(0)} s (over 5 minutes); the larger sizes are not run`);
      break;
    }
  }
  return rows;
}
