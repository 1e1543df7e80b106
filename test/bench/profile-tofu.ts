// A profile, not a bench row: one first apply (and prune) of the OpenTofu bench's 300 resources, every HTTP call timed.
// `node test/bench/profile-tofu.ts` prints the calls per path (count, summed and mean latency) and when each kind's
// creates began and ended; PROF_OUT=FILE keeps every call and log line as JSON for a timeline.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { HttpRequest } from '../../agent/openstack/transport.ts';
import { manifestsOf } from './opentofu.ts';

const cloudName = 'kupenstack-local';
const t0 = performance.now();
const rel = (): number => Math.round(performance.now() - t0);
const calls: { start: number; end: number; method: string; service: string; path: string; status: number }[] = [];
const cloud = OpenStackCloud.fromCloudsYaml(cloudName);
const transport = cloud.session.transport;
const send = transport.send.bind(transport);
transport.send = async (req: HttpRequest) => {
  const start = rel();
  const res = await send(req);
  const u = new URL(req.url);
  calls.push({ start, end: rel(), method: req.countAs ?? req.method, service: req.service, path: u.pathname.replace(/[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{32}/g, 'ID'), status: res.status });
  return res;
};
const events: string[] = [];
const owner = `p${randomBytes(3).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'ks-prof-'));
const repo = join(dir, 'repo');
mkdirSync(repo);
writeFileSync(join(repo, 'all.yaml'), manifestsOf('tofu-peer', 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG2u2KZ3aQ3n3yVQ5Kk2bmBzwAAAAAAAAAAAAAAAAAAA bench@kupenstack'));
const config = { ...defaultConfig, owner, projectPrefix: `${owner}-`, stateDir: join(dir, 'state') };
const run = (log: (line: string) => void) => applyPath({ path: repo, cloud: cloudName, openstack: cloud, config, prune: true, allowMassDelete: true, log });
try {
  const out = await run((l) => events.push(`${rel()} ${l}`));
  console.log(`apply ${(rel() / 1000).toFixed(1)} s, ${out.report?.errors.length ?? '?'} errors, calls ${JSON.stringify(out.report?.apiCalls)}`);
  const byPath = new Map<string, { n: number; ms: number }>();
  for (const c of calls) {
    const k = `${c.service} ${c.method} ${c.path}`;
    const a = byPath.get(k) ?? { n: 0, ms: 0 };
    byPath.set(k, { n: a.n + 1, ms: a.ms + c.end - c.start });
  }
  for (const [k, a] of [...byPath].sort((x, y) => y[1].ms - x[1].ms)) console.log(`${String(a.n).padStart(4)} calls ${(a.ms / 1000).toFixed(1).padStart(7)} s summed, ${String(Math.round(a.ms / a.n)).padStart(6)} ms mean  ${k}`);
  const kinds = new Map<string, number[]>();
  for (const e of events) {
    const [at, what, address] = e.split(' ');
    if (what === 'create') kinds.set(address!.split('/')[1]!, [...(kinds.get(address!.split('/')[1]!) ?? []), Number(at)]);
  }
  for (const [kind, at] of kinds) console.log(`${kind}: ${at.length} created from ${(Math.min(...at) / 1000).toFixed(1)} s to ${(Math.max(...at) / 1000).toFixed(1)} s`);
  if (process.env.PROF_OUT) writeFileSync(process.env.PROF_OUT, JSON.stringify({ calls, events }, null, 1));
} finally {
  rmSync(join(repo, 'all.yaml'));
  const p0 = performance.now();
  await run(() => undefined);
  console.log(`prune ${((performance.now() - p0) / 1000).toFixed(1)} s`);
  for (const p of await ownedProjects(cloud, owner)) await cloud.identity.remove(`/projects/${p.id}`);
  rmSync(dir, { recursive: true, force: true });
}
