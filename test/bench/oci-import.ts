// OCI import → Glance: throughput beside the curl pipe (registry blob | Glance PUT), peak RSS at 1 and 4 GiB, and at 4 GiB
// through the staged import (stage + glance-direct, Glance's image_conversion makes a qcow2 raw).
// Run alone: BENCH_ONLY=oci npm run bench. The import runs in a child process (the compiled agent) so its max RSS is its own.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { deleteVersion } from '../../agent/glance/versions.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { ensureProjects } from '../../agent/act/projects.ts';
import { testCloudName } from '../support/context.ts';
import { agentFlags } from '../support/agent-flags.ts';
import { describe, flushWrites, interleaved, median, type Rounds } from './rounds.ts';
import type { BenchRow } from './table.ts';
import { importDisk } from '../../agent/glance/import.ts';
import { diskSourceFor } from '../../agent/glance/registry-source.ts';

const registry = '127.0.0.1:5050';
const repo = 'bench/oci-import';
const dataDir = '/var/tmp/kupenstack-bench';
const GiB = 1024 ** 3;

interface ChildResult {
  id: string;
  seconds: number;
  bytes: number;
  maxRssKiB: number;
  reused: boolean;
}

/** Random (incompressible) raw disk data, made once and kept for later runs. */
async function diskFile(size: number): Promise<{ file: string; digest: string }> {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, `disk-${size / GiB}g.raw`);
  const digestFile = `${file}.sha256`;
  if (!existsSync(file) || statSync(file).size !== size || !existsSync(digestFile)) {
    execFileSync('bash', ['-c', `head -c ${size} /dev/urandom > '${file}'`]);
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file, { highWaterMark: 4 << 20 })) hash.update(chunk as Buffer);
    writeFileSync(digestFile, `sha256:${hash.digest('hex')}`);
  }
  return { file, digest: readFileSync(digestFile, 'utf8').trim() };
}

function curl(args: string[]): string {
  const r = spawnSync('curl', ['-sS', '--fail-with-body', ...args], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`curl ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

function pushBlob(content: { file?: string; data?: string }, digest: string): void {
  if (spawnSync('curl', ['-sSf', '-o', '/dev/null', '-I', `http://${registry}/v2/${repo}/blobs/${digest}`]).status === 0) return;
  const headers = curl(['-D', '-', '-o', '/dev/null', '-X', 'POST', `http://${registry}/v2/${repo}/blobs/uploads/`]);
  const location = /^location:\s*(\S+)/im.exec(headers)?.[1];
  if (!location) throw new Error('the registry gave no upload location');
  const url = `${location}${location.includes('?') ? '&' : '?'}digest=${encodeURIComponent(digest)}`;
  curl(['-o', '/dev/null', '-X', 'PUT', '-H', 'Content-Type: application/octet-stream', ...(content.file ? ['-T', content.file] : ['--data-binary', content.data ?? '']), url]);
}

/** The raw disk as qcow2 (qemu-img, made once and kept): what the staged import converts back to raw. */
async function qcow2File(raw: string): Promise<{ file: string; digest: string }> {
  const file = raw.replace(/\.raw$/, '.qcow2');
  const digestFile = `${file}.sha256`;
  if (!existsSync(file) || !existsSync(digestFile)) {
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', raw, file]);
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file, { highWaterMark: 4 << 20 })) hash.update(chunk as Buffer);
    writeFileSync(digestFile, `sha256:${hash.digest('hex')}`);
  }
  return { file, digest: readFileSync(digestFile, 'utf8').trim() };
}

/** A KupenStack disk artifact (what `oras push --artifact-type application/vnd.kupenstack.vmimage.v1 disk.raw:application/vnd.diskimage.raw` makes). */
function pushArtifact(file: string, digest: string, tag: string, format: 'raw' | 'qcow2' = 'raw'): string {
  pushBlob({ file }, digest);
  const empty = '{}';
  const emptyDigest = `sha256:${createHash('sha256').update(empty).digest('hex')}`;
  pushBlob({ data: empty }, emptyDigest);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    artifactType: 'application/vnd.kupenstack.vmimage.v1',
    config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: emptyDigest, size: 2, data: 'e30=' },
    layers: [{ mediaType: `application/vnd.diskimage.${format}`, digest, size: statSync(file).size, annotations: { 'org.opencontainers.image.title': `disk.${format}` } }],
    annotations: { 'io.kupenstack.vmimage.disk-format': format },
  });
  curl(['-o', '/dev/null', '-X', 'PUT', '-H', 'Content-Type: application/vnd.oci.image.manifest.v1+json', '--data-binary', manifest, `http://${registry}/v2/${repo}/manifests/${tag}`]);
  return `${registry}/${repo}:${tag}`;
}

const root = fileURLToPath(new URL('../../', import.meta.url));
/** The import child's program: the compiled child (build()) with the reference, project and disk format it is given. */
const childCode = `const { child } = await import(${JSON.stringify(`${root}dist/test-bench-oci-child.js`)}); await child(process.argv[1], process.argv[2], process.argv[3]);`;

/**
 * The import in a child process: its own max RSS. It runs the compiled
 * agent (dist/, what `kupenstack` ships), not the TypeScript sources, whose
 * type stripping alone costs ~30 MB of RSS.
 */
function runChild(ref: string, projectId: string, nodeFlags: string[], glanceDiskFormat = 'keep'): ChildResult {
  const r = spawnSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', childCode, ref, projectId, glanceDiskFormat], { encoding: 'utf8', maxBuffer: 1 << 20, cwd: root });
  if (r.status !== 0) throw new Error(`the import child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as ChildResult;
}

/** runChild without blocking this process: several imports at once, each in its own process with its own max RSS. */
function runChildAsync(ref: string, projectId: string, nodeFlags: string[]): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [...nodeFlags, '--input-type=module', '-e', childCode, ref, projectId, 'keep'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let [out, err] = ['', ''];
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.once('error', reject);
    c.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as ChildResult) : reject(new Error(`the import child failed: ${err}`))));
  });
}

/**
 * Peak RSS with the machine loaded: the 1 GiB and the 4 GiB imports at once, each beside the other (two
 * processes, Glance ingesting both, the registry serving both), each process's own peak as shipped.
 */
async function loadedRow(refs: [string, string], projectId: string, shipped: string[], g: { image: ReturnType<OpenStackCloud['client']>; projectId: string }): Promise<BenchRow> {
  const load0 = loadavg()[0]!;
  const [a, b] = await Promise.all(refs.map((ref) => runChildAsync(ref, projectId, shipped)));
  const load1 = loadavg()[0]!;
  for (const o of [a!, b!]) await deleteVersion(g, o.id);
  if (a!.reused || b!.reused || a!.bytes !== GiB || b!.bytes !== 4 * GiB) throw new Error(`the loaded imports did not transfer 1 and 4 GiB: ${JSON.stringify([a, b])}`);
  const [r1, r4] = [a!.maxRssKiB / 1024, b!.maxRssKiB / 1024];
  return {
    name: 'oci import peak RSS with the machine loaded: the 1 GiB and the 4 GiB import at once',
    ours: `${r1.toFixed(0)} MB (1 GiB, ${mibps(GiB, a!.seconds).toFixed(0)} MiB/s) and ${r4.toFixed(0)} MB (4 GiB, ${mibps(4 * GiB, b!.seconds).toFixed(0)} MiB/s) as shipped; load ${load0.toFixed(1)} → ${load1.toFixed(1)}`,
    peer: 'none',
    goal: '≤ 150 MB each, as shipped',
    met: r1 <= 150 && r4 <= 150,
  };
}

/** The child's program, compiled with the agent into dist/ by build(). */
const childSource = `
import { performance } from 'node:perf_hooks';
import { importDisk } from './agent/glance/import.js';
import { diskSourceFor } from './agent/glance/registry-source.js';
import { OpenStackCloud } from './agent/openstack/cloud.js';
import { configureGlanceDiskFormat } from './agent/glance/raw-target.js';
export async function child(ref, projectId, glanceDiskFormat) {
  // keep: PUT /file; raw: a qcow2 is staged and imported through glance-direct (Glance converts it).
  configureGlanceDiskFormat(glanceDiskFormat);
  const cloud = OpenStackCloud.fromCloudsYaml(${JSON.stringify(testCloudName)});
  const image = cloud.client('image', { projectId });
  // A token Glance has validated before the clock starts, like the pipe's (its session made Glance calls already).
  await image.get('/images?limit=1');
  const [repository, tag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
  const started = performance.now();
  const result = await importDisk({ image, projectId }, diskSourceFor(), { repository, tag, insecure: true });
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(JSON.stringify({ id: result.image.id, seconds, bytes: Number(result.image.size), maxRssKiB: process.resourceUsage().maxRSS, reused: result.reused }) + '\\n');
}
`;

function build(): void {
  const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm run build failed: ${r.stdout}${r.stderr}`);
  writeFileSync(join(root, 'dist', 'test-bench-oci-child.js'), childSource);
}

/**
 * Create an image, then curl GET blob | curl PUT into it: the peer, no verification at all.
 * Its clock starts before the create, as ours does (a script must make the image too).
 */
async function pipe(cloud: OpenStackCloud, projectId: string, digest: string): Promise<{ id: string; seconds: number }> {
  const image = cloud.client('image', { projectId });
  const started = performance.now();
  const img = await image.post<{ id: string }>('/images', { name: 'bench-pipe', disk_format: 'raw', container_format: 'bare', visibility: 'private' }, [201]);
  const token = (await image.session.token(image.scope)).value;
  const fileUrl = `${await image.base()}/images/${img.id}/file`;
  const r = spawnSync('bash', ['-c', 'set -o pipefail; curl -sSf "$BLOB" | curl -sSf -X PUT -T - -H "X-Auth-Token: $TOKEN" -H "Content-Type: application/octet-stream" "$FILE"'], {
    env: { ...process.env, BLOB: `http://${registry}/v2/${repo}/blobs/${digest}`, TOKEN: token, FILE: fileUrl },
    encoding: 'utf8',
  });
  const seconds = (performance.now() - started) / 1000;
  if (r.status !== 0) throw new Error(`the curl pipe failed: ${r.stderr}`);
  return { id: img.id, seconds };
}

const mibps = (bytes: number, s: number): number => bytes / 1048576 / s;

/**
 * The staged import's row: 4 GiB of qcow2 through the same verified pipeline
 * into PUT /stage, then glance-direct with the test bed's image_conversion to
 * raw (the rate includes Glance's conversion). The image is left in `made`.
 */
export async function stagedRow(rawFile: string, projectId: string, shipped: string[], made: string[]): Promise<BenchRow> {
  const q = await qcow2File(rawFile);
  const ref = pushArtifact(q.file, q.digest, 'four-gib-qcow2', 'qcow2');
  const o = runChild(ref, projectId, shipped, 'raw');
  made.push(o.id);
  if (o.reused || o.bytes !== statSync(rawFile).size) throw new Error(`the staged import did not land the raw disk: ${JSON.stringify(o)}`);
  const rss = o.maxRssKiB / 1024;
  return {
    name: 'oci import peak RSS, 4 GiB qcow2 staged and converted to raw (stage + glance-direct)',
    ours: `${rss.toFixed(0)} MB as shipped (${mibps(statSync(q.file).size, o.seconds).toFixed(0)} MiB/s, Glance's conversion included)`,
    peer: 'none',
    goal: '≤ 150 MB as shipped',
    met: rss <= 150,
  };
}

/** A 1 GiB import row, judged on the median ratio of its interleaved pairs (each side's own seconds); goal ≥ 1.0× the curl pipe. */
function importRow(key: string, name: string, r: Rounds): BenchRow {
  const d = describe(r, 'the curl pipe', key);
  const rate = (ms: number): string => mibps(GiB, ms / 1000).toFixed(0);
  return { name: `${name} (MiB/s), ${r.ours.length} interleaved pairs`, ours: `${rate(median(r.ours))} = ${d.text}`, peer: `curl | curl -T: ${rate(median(r.theirs))}`, goal: '≥ 1.0× the curl pipe (median)', met: d.ratio >= 1.0 };
}

export async function benchOciImport(): Promise<BenchRow[]> {
  build();
  // Glance and Keystone only: the project is made directly, no Nova needed.
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const owner = `bench${Date.now() % 100000}`;
  const project = (await ensureProjects(cloud, [owner], { owner, prefix: 'kst-', domainId: 'default', role: 'member' })).get(owner)!;
  const projectId = project.id;
  const g = { image: cloud.client('image', { projectId }), projectId };
  const rows: BenchRow[] = [];
  const made: string[] = [];
  try {
    // Measured as shipped (agentFlags: the CLI's first line, as deploy/image/kupenstack runs it). With Node's default
    // 16 MB semi-spaces, 64 KiB socket buffers live until a rare scavenge and the stream walks cold memory:
    // measured 2.7 CPU-s per GiB instead of 1.9, and 0.3-0.5 s more per GiB.
    const shipped = agentFlags();
    const one = await diskFile(GiB);
    const ref1 = pushArtifact(one.file, one.digest, 'one-gib');
    // Side by side, interleaved (rounds.ts: at least 5 pairs; Glance's ingest is the shared bottleneck). Each side's own
    // seconds (from its create, the token already held) are what the pairs compare, not the child's process start.
    const ours: ChildResult[] = [];
    const peer = async (): Promise<number> => {
      const p = await pipe(cloud, projectId, one.digest);
      // Deleted after the clock (10 or more pairs of 1 GiB would fill the bed's Glance store); kept for the cleanup if that fails.
      await deleteVersion(g, p.id).catch(() => made.push(p.id));
      return p.seconds * 1000;
    };
    // Off the clock before each side's round: Glance's store and the pipe's temp files are written back now.
    const settled = { settle: flushWrites };
    const cold = await interleaved(async () => {
      const o = runChild(ref1, projectId, shipped);
      if (o.reused || o.bytes !== GiB) throw new Error(`the import did not transfer 1 GiB: ${JSON.stringify(o)}`);
      ours.push(o);
      // Delete: the next run imports the same digest again (under the next id).
      await deleteVersion(g, o.id);
      return o.seconds * 1000;
    }, peer, settled);
    rows.push(importRow('import fresh', 'oci import 1 GiB raw → Glance in a fresh process (the CLI, `kupenstack image import`)', cold));
    // The same import as the long-lived agent and controller run it: in this (warm) process, after one import to warm it.
    const warmOnce = async (): Promise<number> => {
      const t0 = performance.now();
      const result = await importDisk({ image: g.image, projectId }, diskSourceFor(), { repository: ref1.slice(0, ref1.lastIndexOf(':')), tag: ref1.slice(ref1.lastIndexOf(':') + 1), insecure: true });
      const ms = performance.now() - t0;
      if (result.reused || Number(result.image.size) !== GiB) throw new Error(`the warm import did not transfer 1 GiB (reused ${String(result.reused)})`);
      // Deleted after the clock: the next run imports the same digest again.
      await deleteVersion(g, result.image.id);
      return ms;
    };
    await g.image.get('/images?limit=1');
    await warmOnce();
    const warm = await interleaved(warmOnce, peer, settled);
    rows.push(importRow('import warm', 'oci import 1 GiB raw → Glance in a long-lived process (warm, as the agent and controller run it)', warm));
    // Peak RSS as shipped, and with Node's default heap sizing for reference: under a high
    // allocation rate V8 grows the semi-spaces to 16 MB each and scavenges rarely, so dead
    // chunk buffers pile up; the shipped --max-semi-space-size=1 collects them sooner.
    const rss1 = Math.max(...ours.map((o) => o.maxRssKiB)) / 1024;
    const o1d = runChild(ref1, projectId, []);
    await deleteVersion(g, o1d.id);
    const rss1d = o1d.maxRssKiB / 1024;
    rows.push({ name: 'oci import peak RSS, 1 GiB', ours: `${rss1.toFixed(0)} MB as shipped (${shipped.join(' ')}); ${rss1d.toFixed(0)} MB with Node's defaults`, peer: 'none', goal: '≤ 150 MB as shipped', met: rss1 <= 150 });

    const four = await diskFile(4 * GiB);
    const ref4 = pushArtifact(four.file, four.digest, 'four-gib');
    const o4d = runChild(ref4, projectId, []);
    await deleteVersion(g, o4d.id);
    const o4 = runChild(ref4, projectId, shipped);
    made.push(o4.id);
    const [rss4, rss4d] = [o4.maxRssKiB / 1024, o4d.maxRssKiB / 1024];
    rows.push({
      name: 'oci import peak RSS, 4 GiB',
      ours: `${rss4.toFixed(0)} MB as shipped (${mibps(4 * GiB, o4.seconds).toFixed(0)} MiB/s); ${rss4d.toFixed(0)} MB with Node's defaults`,
      peer: 'none',
      goal: '≤ 150 MB as shipped',
      met: rss4 <= 150,
    });

    rows.push(await stagedRow(four.file, projectId, shipped, made));

    // The same digest again: found in Glance, nothing downloaded.
    const again = runChild(ref4, projectId, shipped);
    rows.push({ name: 'oci import, same digest again', ours: `${again.seconds.toFixed(2)} s, reused=${String(again.reused)}`, peer: 'none', goal: 'reused, 0 bytes moved', met: again.reused && again.id === o4.id });
    // The 4 GiB version goes first (the loaded pair imports that digest again, into a fresh image).
    await deleteVersion(g, o4.id);
    made.splice(made.indexOf(o4.id), 1);
    rows.push(await loadedRow([ref1, ref4], projectId, shipped, g));
  } finally {
    for (const id of made) await deleteVersion(g, id).catch(() => undefined);
    await cloud.identity.call('PATCH', `/projects/${projectId}`, { json: { project: { enabled: false } } });
    await cloud.identity.remove(`/projects/${projectId}`);
  }
  return rows;
}

/** The staged row alone (`node -e "import('./test/bench/oci-import.ts').then((m) => m.benchStagedImport())"`): its own project, deleted after. */
export async function benchStagedImport(): Promise<BenchRow[]> {
  build();
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const owner = `bench${Date.now() % 100000}`;
  const project = (await ensureProjects(cloud, [owner], { owner, prefix: 'kst-', domainId: 'default', role: 'member' })).get(owner)!;
  const g = { image: cloud.client('image', { projectId: project.id }), projectId: project.id };
  const made: string[] = [];
  try {
    return [await stagedRow((await diskFile(4 * GiB)).file, project.id, agentFlags(), made)];
  } finally {
    for (const id of made) await deleteVersion(g, id).catch(() => undefined);
    await cloud.identity.call('PATCH', `/projects/${project.id}`, { json: { project: { enabled: false } } });
    await cloud.identity.remove(`/projects/${project.id}`);
  }
}
