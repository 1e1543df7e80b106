import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { BenchRow } from './table.ts';

const cloudName = 'kupenstack-local';
let sshKey = '';

/** The same 300 objects for both sides: 60 networks, subnets, groups (one rule each) and ports, 30 key pairs and flavors. */
export function shape(scale: number): { nets: number; keys: number } {
  return { nets: Math.round(60 * scale), keys: Math.round(30 * scale) };
}

export function manifests(ns: string, scale: number, key = sshKey): string {
  const { nets, keys } = shape(scale);
  const h = (kind: string, name: string) => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n`;
  const docs: string[] = [];
  for (let i = 0; i < nets; i++) {
    docs.push(`${h('Network', `net-${i}`)}  mtu: 1400\n`);
    docs.push(`${h('Subnet', `sub-${i}`)}  networkRef: {name: net-${i}}\n  cidr: 10.${i}.0.0/24\n`);
    docs.push(`${h('SecurityGroup', `sg-${i}`)}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 10.0.0.0/8}\n`);
    docs.push(`${h('Port', `port-${i}`)}  networkRef: {name: net-${i}}\n  securityGroupRefs: [{name: sg-${i}}]\n`);
  }
  for (let i = 0; i < keys; i++) {
    docs.push(`${h('KeyPair', `key-${i}`)}  publicKey: ${key}\n`);
    docs.push(`${h('Flavor', `flavor-${i}`)}  vcpus: 1\n  ram: 64\n  disk: 1\n`);
  }
  return docs.join('---\n');
}

/** The shell script an operator would write with the openstack CLI for the same objects. */
function cliScript(project: string, scale: number): string {
  const { nets, keys } = shape(scale);
  const lines = ['set -e', `P=${project}`];
  for (let i = 0; i < nets; i++) {
    // By id: an admin sees every project's objects, so names are ambiguous.
    lines.push(`N=$(openstack network create --project $P --mtu 1400 -f value -c id net-${i})`);
    lines.push(`openstack subnet create --project $P --network $N --subnet-range 10.${i}.0.0/24 sub-${i} >/dev/null`);
    lines.push(`G=$(openstack security group create --project $P -f value -c id sg-${i})`);
    lines.push(`openstack security group rule create --project $P --ingress --protocol tcp --dst-port 22 --remote-ip 10.0.0.0/8 $G >/dev/null`);
    lines.push(`openstack port create --project $P --network $N --security-group $G port-${i} >/dev/null`);
  }
  for (let i = 0; i < keys; i++) {
    lines.push(`openstack keypair create --public-key /dev/stdin $P-key-${i} >/dev/null <<< '${sshKey}'`);
    lines.push(`openstack flavor create --private --project $P --vcpus 1 --ram 64 --disk 1 $P-flavor-${i} >/dev/null`);
  }
  return `${lines.join('\n')}\n`;
}

export async function benchApply(): Promise<BenchRow[]> {
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  const { nets, keys } = shape(scale);
  const objects = nets * 5 + keys * 2;
  const resources = nets * 4 + keys * 2;
  const owner = `b${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'ks-bench-apply-'));
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'bench@kupenstack', '-f', join(dir, 'key')]);
  sshKey = readFileSync(join(dir, 'key.pub'), 'utf8').trim();
  mkdirSync(join(dir, 'repo'));
  writeFileSync(join(dir, 'repo', 'all.yaml'), manifests('bench', scale));
  const config = { ...defaultConfig, owner, projectPrefix: `${owner}-`, stateDir: join(dir, 'state') };
  const cloud = OpenStackCloud.fromCloudsYaml(cloudName);
  const rows: BenchRow[] = [];
  const cliProject = `${owner}-cli`;
  try {
    const t0 = performance.now();
    const first = await applyPath({ path: join(dir, 'repo'), cloud: cloudName, config, prune: false, allowMassDelete: false, log: () => undefined });
    const ours = (performance.now() - t0) / 1000;
    if (!first.report || first.report.errors.length) throw new Error(`apply failed: ${JSON.stringify(first.report?.errors ?? first.diagnostics)}`);
    const t1 = performance.now();
    const again = await applyPath({ path: join(dir, 'repo'), cloud: cloudName, config, prune: false, allowMassDelete: false, log: () => undefined });
    const noop = (performance.now() - t1) / 1000;

    // The same end state with the openstack CLI, one call after the other.
    execFileSync('openstack', ['--os-cloud', cloudName, 'project', 'create', cliProject], { stdio: 'ignore' });
    writeFileSync(join(dir, 'cli.sh'), cliScript(cliProject, scale));
    const t2 = performance.now();
    const cli = spawnSync('bash', [join(dir, 'cli.sh')], { env: { ...process.env, OS_CLOUD: cloudName }, encoding: 'utf8' });
    const cliSeconds = (performance.now() - t2) / 1000;
    if (cli.status !== 0) throw new Error(`the CLI script failed: ${cli.stderr.slice(-500)}`);
    await sameEndState(cloud, `${owner}-bench`, cliProject, nets);

    const r = first.report;
    const kinds = 6;
    rows.push(
      { name: `apply ${resources} resources (${objects} OpenStack objects incl. rules), first run`, ours: `${ours.toFixed(1)} s`, peer: `openstack CLI script: ${cliSeconds.toFixed(1)} s (${(cliSeconds / ours).toFixed(1)}× ours)`, goal: '≥ 10× faster than the CLI', met: cliSeconds / ours >= 10 },
      // Rules are objects of their own in Neutron, flavor access is a grant of its own: both cost one call each.
      { name: '  write calls of the first run', ours: String(r.apiCalls.write), peer: `${objects} objects + 1 project + 1 role + ${keys} flavor grants`, goal: `≤ ${objects + 2 + keys} (one call per object)`, met: r.apiCalls.write <= objects + 2 + keys },
      { name: '  read calls of the first run', ours: String(r.apiCalls.read), peer: `${kinds} kinds, 1 project`, goal: `≤ ${3 * kinds} (3 per kind per project)`, met: r.apiCalls.read <= 3 * kinds },
      { name: 'no-op apply of the same revision', ours: `${noop.toFixed(2)} s, ${again.report!.apiCalls.write} writes`, peer: `${again.report!.apiCalls.read} reads`, goal: `0 writes, ≤ ${3 * kinds + 4} reads`, met: again.report!.apiCalls.write === 0 && again.report!.apiCalls.read <= 3 * kinds + 4 },
    );
  } finally {
    // Ours: prune everything this owner made. Theirs: the CLI's objects go with a purge of the project.
    rmSync(join(dir, 'repo'), { recursive: true, force: true });
    mkdirSync(join(dir, 'repo'));
    await applyPath({ path: join(dir, 'repo'), cloud: cloudName, config, prune: true, allowMassDelete: true, log: () => undefined });
    for (const p of await ownedProjects(cloud, owner)) await cloud.identity.remove(`/projects/${p.id}`);
    spawnSync('bash', ['-c', `openstack --os-cloud ${cloudName} project purge --project ${cliProject}; for i in $(seq 0 ${keys - 1}); do openstack --os-cloud ${cloudName} keypair delete ${cliProject}-key-$i; openstack --os-cloud ${cloudName} flavor delete ${cliProject}-flavor-$i; done`], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

async function sameEndState(cloud: OpenStackCloud, ours: string, theirs: string, nets: number): Promise<void> {
  const network = cloud.client('network');
  for (const name of [ours, theirs]) {
    const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name });
    const count = async (path: string, key: string) => (await network.list<{ name: string }>(path, key, { project_id: p!.id })).length;
    const got = [await count('/networks', 'networks'), await count('/subnets', 'subnets'), await count('/ports', 'ports')];
    if (got[0] !== nets || got[1] !== nets || (got[2] ?? 0) < nets) throw new Error(`${name}: expected ${nets} networks, subnets and ports, got ${got.join('/')}`);
  }
}
