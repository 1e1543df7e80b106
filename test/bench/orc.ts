import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ownedProjects } from '../../agent/act/projects.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { kubectlOk } from '../integration/controller/harness.ts';
import { buildOrc, type OrcBuild } from '../testbed/orc/peer.ts';
import { shape } from './apply.ts';
import { benchSshKey } from './opentofu.ts';
import { cloudsYaml, grantAdmin, makeUser, writeCloudsFile, type BenchUser } from './orc-identity.ts';
import { dropChanges, firstApply, firstRows, killRecovery, noop, oneChange, type First, type Recovery } from './orc-measure.ts';
import { kupenstackSide, orcSide, type Side } from './orc-sides.ts';
import type { BenchRow } from './table.ts';

/*
 * BENCH_ONLY=orc (issue 51): KupenStack's in-cluster controller beside ORC (openstack-resource-controller, built by
 * test/testbed/orc/build.sh from the Go module proxy, or ORC_SOURCE_TGZ), both host processes against the test bed,
 * the same objects both ways through `kubectl apply` into fresh namespaces: the OpenTofu bench's 300 (60 networks,
 * subnets, security groups with one rule, ports; 30 key pairs, flavors). Interleaved rounds (the side that goes first
 * alternates), each on a fresh namespace and a freshly started controller; median and spread (min–max), load beside.
 * Then, on the last round's namespaces: one change → first write, the no-op with drift detection on both; then a
 * kill -9 half-way through a first apply on each side. Each side's OpenStack requests are told apart by a Keystone
 * user of its own (orc-identity.ts). Everything either side made is deleted (through that side's controller, then a
 * backstop for what it left).
 * BENCH_ORC_OBJECTS (300), BENCH_ORC_ROUNDS (3), BENCH_ORC_NOOP_SECONDS (300), BENCH_ORC_RESYNC_SECONDS (60);
 * BENCH_ORC_FIRST=1 stops after the first-apply rows.
 */
const repo = join(import.meta.dirname, '../..');
const adminCloud = 'kupenstack-local';
const num = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

interface Bed {
  run: string;
  ours: Side;
  orc: Side;
  build: OrcBuild;
  cloud: OpenStackCloud;
  key: string;
  /** Namespaces made and not yet cleaned up, for the finally. */
  live: [Side, string][];
}

export async function benchOrc(): Promise<BenchRow[]> {
  const scale = num('BENCH_ORC_OBJECTS', 300) / 300;
  const { nets, keys } = shape(scale);
  const n = nets * 4 + keys * 2;
  // The controller as the image runs it (dist/), with this checkout's CRDs; ORC built once and cached.
  execFileSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', join(repo, 'tsconfig.build.json')], { stdio: 'inherit' });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repo, 'deploy/crds')]);
  const build = buildOrc();
  process.stderr.write(`[bench] orc: ORC built from ${build.source}${build.hasResync ? '' : ' (no resyncPeriod)'}\n`);
  const cloud = OpenStackCloud.fromCloudsYaml(adminCloud);
  const dir = mkdtempSync(join(tmpdir(), 'ks-bench-orc-'));
  const run = randomBytes(3).toString('hex');
  const users: BenchUser[] = [];
  const live: [Side, string][] = [];
  const sides: Side[] = [];
  try {
    const ksUser = await makeUser(cloud, `ksb-${run}`);
    users.push(ksUser);
    const [admin] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: 'admin' });
    await grantAdmin(cloud, ksUser, admin!.id);
    const orcUser = await makeUser(cloud, `orcb-${run}`);
    users.push(orcUser);
    const bed: Bed = { run, build, cloud, key: benchSshKey(dir), live, ours: kupenstackSide(ksUser, writeCloudsFile(dir, cloudsYaml('bench', ksUser, 'admin')), run), orc: orcSide(orcUser, build, cloud) };
    sides.push(bed.ours, bed.orc);
    return await measureAll(bed, n, scale);
  } finally {
    await cleanUpAll(cloud, live, users, `ksb${run}`);
    // The controllers, and what a side installed for its run (ours: the chart's finalizer policy).
    for (const side of sides) await side.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measureAll(bed: Bed, n: number, scale: number): Promise<BenchRow[]> {
  const { ours, orc, live } = bed;
  const firsts = new Map<Side, First[]>([
    [ours, []],
    [orc, []],
  ]);
  const rounds = num('BENCH_ORC_ROUNDS', 3);
  // BENCH_ORC_SIDES=kupenstack: our side's first applies alone, for profiling it (no rows; each round on stderr).
  const alone = process.env.BENCH_ORC_SIDES === 'kupenstack';
  for (let r = 0; r < rounds; r++) {
    // The round before's namespaces go first: one round's objects at a time in the cloud.
    for (const [side, ns] of live.splice(0)) await side.cleanUp([ns]);
    for (const side of alone ? [ours] : r % 2 ? [orc, ours] : [ours, orc]) {
      const ns = `${side === ours ? 'ksb' : 'orcb'}-${bed.run}-${r}`;
      live.push([side, ns]);
      firsts.get(side)!.push(await firstApply(side, ns, scale, bed.key));
    }
  }
  if (alone) return [];
  const rows = firstRows(n, firsts.get(ours)!, firsts.get(orc)!, bed.build.source);
  // BENCH_ORC_FIRST=1: the first-apply rows alone (a full-size run's quick look); the finally cleans up.
  if (process.env.BENCH_ORC_FIRST === '1') return rows;
  const pair: [Side, string][] = [ours, orc].map((s) => live.find(([x]) => x === s)!);
  // Each row also as it comes (a long run's rows survive its interruption).
  const add = (row: BenchRow): void => {
    process.stderr.write(`[bench] orc row: ${JSON.stringify(row)}\n`);
    rows.push(row);
  };
  add(await oneChange(pair, n));
  await dropChanges(pair, n);
  add(await noop(pair, n, scale, bed.key, { seconds: num('BENCH_ORC_NOOP_SECONDS', 300), resyncSeconds: num('BENCH_ORC_RESYNC_SECONDS', 60), orcResync: bed.build.hasResync }));
  for (const [side, ns] of live.splice(0)) await side.cleanUp([ns]);
  add(await killRow(bed, scale));
  return rows;
}

/** kill -9 of each controller half-way (half its objects Ready) through a first apply, then started again. */
async function killRow(bed: Bed, scale: number): Promise<BenchRow> {
  const got = new Map<Side, Recovery>();
  for (const side of [bed.ours, bed.orc]) {
    const ns = `${side === bed.ours ? 'ksb' : 'orcb'}-${bed.run}-kill`;
    bed.live.push([side, ns]);
    got.set(side, await killRecovery(side, ns, scale, bed.key, bed.cloud));
    await side.cleanUp([ns]);
    bed.live.splice(bed.live.findIndex(([, x]) => x === ns), 1);
  }
  const { nets, keys } = shape(scale);
  const n = nets * 4 + keys * 2;
  const [o, t] = [got.get(bed.ours)!, got.get(bed.orc)!];
  const cell = (r: Recovery): string => `${r.duplicates} duplicates (Neutron names), ${r.ready}/${n} Ready ${r.seconds.toFixed(0)} s after the restart`;
  return {
    name: `beside ORC: kill -9 of the controller when half of ${n} objects are Ready (first apply), started again at once`,
    ours: cell(o),
    peer: `ORC: ${cell(t)}`,
    goal: '0 duplicates, all Ready',
    met: o.duplicates === 0 && o.ready === n,
  };
}

/** Whatever is left: namespaces through their side's controller, then the projects, key pairs and users the bench made. */
async function cleanUpAll(cloud: OpenStackCloud, live: [Side, string][], users: BenchUser[], owner: string): Promise<void> {
  for (const [side, ns] of live.splice(0)) await side.cleanUp([ns]).catch((err: unknown) => process.stderr.write(`[bench] orc: clean-up of ${ns}: ${String(err)}\n`));
  for (const p of await ownedProjects(cloud, owner)) await cloud.identity.remove(`/projects/${p.id}`);
  const compute = cloud.client('compute');
  for (const u of users) {
    for (const k of await compute.list<{ keypair: { name: string } }>('/os-keypairs', 'keypairs', { user_id: u.id }).catch(() => [])) await compute.remove(`/os-keypairs/${k.keypair.name}?user_id=${u.id}`).catch(() => undefined);
    await cloud.identity.remove(`/users/${u.id}`);
  }
}
