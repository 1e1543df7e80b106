// A profile, not a bench row: one first apply (and prune) of the OpenTofu bench's 300 resources, every HTTP call timed.
// `node test/bench/profile-tofu.ts` prints the calls per path (count, summed and mean latency), the calls per service,
// the OpenStack CPU each service spent (cloud-cpu.ts) and when each kind's creates began and ended. PROF_TOFU=1 first
// runs OpenTofu's first apply of the same resources (its calls read from its debug log), so both sides print the same
// tables. PROF_OUT=FILE keeps every call and log line as JSON for a timeline.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { HttpRequest } from '../../agent/openstack/transport.ts';
import { manifests } from './apply.ts';
import { backgroundCpuRate, benchSshKey, hclOf, measured, measuredAsync, tofuPeer } from './opentofu.ts';
import { measureRequests, requestIdsIn } from './request-cpu.ts';

const cloudName = 'kupenstack-local';
const t0 = performance.now();
const rel = (): number => Math.round(performance.now() - t0);
const idPattern = /[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{32}/g;
const calls: { start: number; end: number; method: string; service: string; path: string; status: number; id: string | null }[] = [];
const cloud = OpenStackCloud.fromCloudsYaml(cloudName);
const transport = cloud.session.transport;
const send = transport.send.bind(transport);
transport.send = async (req: HttpRequest) => {
  const start = rel();
  const res = await send(req);
  const u = new URL(req.url);
  const id = res.headers.get('x-openstack-request-id');
  calls.push({ start, end: rel(), method: req.countAs ?? req.method, service: req.service, path: u.pathname.replace(idPattern, 'ID'), status: res.status, id });
  return res;
};
const events: string[] = [];
const owner = `p${randomBytes(3).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'ks-prof-'));
const repo = join(dir, 'repo');
mkdirSync(repo);
const sshKey = benchSshKey(dir);
writeFileSync(join(repo, 'all.yaml'), manifests('tofu-peer', 1, sshKey));
const config = { ...defaultConfig, owner, projectPrefix: `${owner}-`, stateDir: join(dir, 'state') };
const run = (log: (line: string) => void) => applyPath({ path: repo, cloud: cloudName, openstack: cloud, config, prune: true, allowMassDelete: true, log });

/** Calls per service (`network: 12 POST, 3 GET`) from `service METHOD path` keys. */
function perService(keys: readonly string[]): string {
  const by = new Map<string, Map<string, number>>();
  for (const k of keys) {
    const [service = '', method = ''] = k.split(' ');
    const m = by.get(service) ?? new Map<string, number>();
    by.set(service, m.set(method, (m.get(method) ?? 0) + 1));
  }
  return [...by].map(([s, m]) => `${s} ${[...m.values()].reduce((a, b) => a + b, 0)} (${[...m].map(([x, n]) => `${n} ${x}`).join(', ')})`).join('; ');
}

function cpuTable(byService: ReadonlyMap<string, number>): string {
  return [...byService].filter(([, t]) => t >= 0.05).sort((a, b) => b[1] - a[1]).map(([s, t]) => `${s} ${t.toFixed(1)}`).join(', ');
}

/** What the run's own requests cost the API workers of Neutron and Nova, per call kind (request-cpu.ts). */
async function requestCpu<T>(side: string, work: () => T | Promise<T>, ids: (value: T) => Set<string>): Promise<T> {
  const m = await measureRequests(work, ids);
  console.log(
    `${side}: API workers' CPU by request (neutron-server, nova-api): its own ${m.own.toFixed(1)} CPU-s over ${m.requests} requests; ` +
      `other users' requests meanwhile ${m.others.toFixed(1)}; no request in flight ${m.idle.toFixed(1)}`,
  );
  for (const [k, a] of [...m.kinds].sort((x, y) => y[1].cpu - x[1].cpu)) console.log(`${side}: ${String(a.n).padStart(4)} requests ${a.cpu.toFixed(2).padStart(7)} CPU-s, ${((a.cpu / a.n) * 1000).toFixed(0).padStart(5)} ms each  ${k}`);
  return m.value;
}

const tofuProject = `${owner}-hcl`;
const peer = process.env.PROF_TOFU === '1' ? tofuPeer(dir) : undefined;
try {
  if (peer) {
    // OpenTofu's provider logs every request at TF_LOG=DEBUG ("OpenStack Request URL: METHOD URL"); the service is the endpoint's port.
    const hcl = join(dir, 'hcl');
    mkdirSync(hcl);
    writeFileSync(join(hcl, 'main.tf'), hclOf(tofuProject, sshKey));
    if (peer.tofu(hcl, ['init', '-input=false', '-no-color']).status !== 0) throw new Error('tofu init failed');
    const log = join(dir, 'tofu.log');
    const idle = await backgroundCpuRate();
    const t = await requestCpu(
      'tofu',
      () => measured(() => peer.tofu(hcl, ['apply', '-auto-approve', '-input=false', '-no-color'], { TF_LOG: 'DEBUG', TF_LOG_PATH: log })),
      () => requestIdsIn(readFileSync(log, 'utf8')),
    );
    if (t.value.status !== 0) throw new Error(`tofu apply failed: ${t.value.out.slice(-800)}`);
    const token = await cloud.session.token({ default: true });
    const serviceOf = new Map(token.catalog.flatMap((e) => e.endpoints.map((ep) => [new URL(ep.url).origin, e.type] as const)));
    const keys = [...readFileSync(log, 'utf8').matchAll(/OpenStack Request URL: (\w+) (\S+)/g)].map(([, method, url]) => {
      // The log ends the URL with a colon (before the headers); a key pair's id is its name.
      const u = new URL(url!.replace(/:$/, ''));
      u.pathname = u.pathname.replace(/\/os-keypairs\/[^/]+/, '/os-keypairs/NAME');
      return `${serviceOf.get(u.origin) ?? u.origin} ${u.pathname.endsWith('/auth/tokens') && method === 'POST' ? 'AUTH' : method} ${u.pathname.replace(idPattern, 'ID')}`;
    });
    const byPath = new Map<string, number>();
    for (const k of keys) byPath.set(k, (byPath.get(k) ?? 0) + 1);
    const after = await backgroundCpuRate();
    console.log(`tofu apply ${t.seconds.toFixed(1)} s, OpenStack ${t.cpu.toFixed(1)} CPU-s, net of background ${(t.cpu - ((idle + after) / 2) * t.seconds).toFixed(1)} (load ${t.load}; background ${idle.toFixed(2)}, ${after.toFixed(2)} CPU-s/s): ${cpuTable(t.byService)}`);
    console.log(`tofu calls ${keys.length}: ${perService(keys)}`);
    for (const [k, n] of [...byPath].sort((x, y) => y[1] - x[1])) console.log(`${String(n).padStart(4)} calls  ${k}`);
  }
  const idle = await backgroundCpuRate();
  const out = await requestCpu(
    'ours',
    () => measuredAsync(() => run((l) => events.push(`${rel()} ${l}`))),
    () => new Set(calls.flatMap((c) => (c.id ? [c.id] : []))),
  );
  const after = await backgroundCpuRate();
  const report = out.value.report;
  console.log(`apply ${out.seconds.toFixed(1)} s, ${report?.errors.length ?? '?'} errors, calls ${JSON.stringify(report?.apiCalls)}, OpenStack ${out.cpu.toFixed(1)} CPU-s, net of background ${(out.cpu - ((idle + after) / 2) * out.seconds).toFixed(1)} (load ${out.load}; background ${idle.toFixed(2)}, ${after.toFixed(2)} CPU-s/s): ${cpuTable(out.byService)}`);
  console.log(`our calls ${calls.length}: ${perService(calls.map((c) => `${c.service} ${c.method}`))}`);
  const byPath = new Map<string, { n: number; ms: number }>();
  for (const c of calls) {
    const k = `${c.service} ${c.method} ${c.path}`;
    const a = byPath.get(k) ?? { n: 0, ms: 0 };
    byPath.set(k, { n: a.n + 1, ms: a.ms + c.end - c.start });
  }
  for (const [k, a] of [...byPath].sort((x, y) => y[1].ms - x[1].ms)) console.log(`${String(a.n).padStart(4)} calls ${(a.ms / 1000).toFixed(1).padStart(7)} s summed, ${String(Math.round(a.ms / a.n)).padStart(6)} ms mean  ${k}`);
  const kinds = new Map<string, number[]>();
  for (const e of events) {
    // `123 create  ns/Kind/name`: the log pads its verb, so split on runs of spaces (one space gave an empty address: `undefined:`).
    const [at, what, address = ''] = e.split(/ +/);
    const kind = address.split('/')[1];
    if (what === 'create' && kind) kinds.set(kind, [...(kinds.get(kind) ?? []), Number(at)]);
  }
  for (const [kind, at] of kinds) console.log(`${kind}: ${at.length} created from ${(Math.min(...at) / 1000).toFixed(1)} s to ${(Math.max(...at) / 1000).toFixed(1)} s`);
  if (process.env.PROF_OUT) writeFileSync(process.env.PROF_OUT, JSON.stringify({ calls, events }, null, 1));
} finally {
  rmSync(join(repo, 'all.yaml'));
  const p0 = performance.now();
  await run(() => undefined);
  console.log(`prune ${((performance.now() - p0) / 1000).toFixed(1)} s`);
  for (const p of await ownedProjects(cloud, owner)) await cloud.identity.remove(`/projects/${p.id}`);
  // tofu's project: purged with the CLI (a destroy takes ~10 min); its key pairs (the user's) and flavors (cloud-wide) through the API.
  if (peer) {
    spawnSync('openstack', ['--os-cloud', cloudName, 'project', 'purge', '--project', tofuProject], { stdio: 'ignore' });
    const compute = await cloud.adminCompute();
    for (let i = 0; i < 30; i++) await compute.remove(`/os-keypairs/${tofuProject}_key-${i}`);
    for (const f of await compute.list<{ id: string; name: string }>('/flavors', 'flavors', { is_public: 'None' })) if (f.name.startsWith(`${tofuProject}-flavor-`)) await compute.remove(`/flavors/${f.id}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
