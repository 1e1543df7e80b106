import { createServer, type Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath, type ApplyOutcome } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import type { EngineEvent } from '../../agent/events/events.ts';
import { OpenStackError } from '../../agent/openstack/errors.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';
import { OpenStackFaultProxy } from '../testbed/faults/openstack-proxy.ts';
import { prng } from '../support/apply-child.ts';

/**
 * Issue 16 item 1: apply of 200 resources in 5 projects through a proxy that
 * breaks OpenStack calls at random (5xx, 409, 429 with Retry-After, resets
 * before and after the service did the work, answers slower than the
 * client's timeout, cut bodies). After every round the cloud is listed
 * directly (not through the proxy): every declared object exists exactly
 * once, nothing else of ours exists.
 *
 * Budget: one resource set shared by the seeds. Seed 1 creates all 200; each
 * further seed removes, changes and brings back a random subset and converges.
 * KS_FAULT_SOAK=1 runs the long version (every seed creates all 200 from
 * nothing); KS_FAULT_SEEDS=n changes the number of seeds; KS_FAULT_SEED=s the first seed.
 */
const soak = process.env.KS_FAULT_SOAK === '1';
const seeds = Number(process.env.KS_FAULT_SEEDS ?? 20);
const firstSeed = Number(process.env.KS_FAULT_SEED ?? 1600);
const faultCloud = 'faults-proxied';
/** The client's per-call timeout through the proxy (a `slow` answer is held 2 s longer): the loaded 2-core bed answers some calls in 15 s. */
const apiTimeoutSeconds = Number(process.env.KS_FAULT_API_TIMEOUT ?? 30);

const namespaces = ['faults-a', 'faults-b', 'faults-c', 'faults-d', 'faults-e'];
const neutronPerNamespace = { Network: 13, Subnet: 13, SecurityGroup: 6, Port: 6 };

interface Resource {
  ns: string;
  kind: string;
  name: string;
  doc: (variant: number) => string;
}

/** 5 × 38 Neutron objects, and in the first namespace an image, a flavor, 4 VMs and 4 volumes: 200. */
function resources(imageUrl: string): Resource[] {
  const out: Resource[] = [];
  for (const [n, ns] of namespaces.entries()) {
    for (let i = 0; i < neutronPerNamespace.Network; i++) {
      out.push({ ns, kind: 'Network', name: `net-${i}`, doc: (v) => `${head('Network', `net-${i}`, ns)}  mtu: ${v % 2 ? 1400 : 1450}\n` });
      out.push({ ns, kind: 'Subnet', name: `sub-${i}`, doc: () => `${head('Subnet', `sub-${i}`, ns)}  networkRef: {name: net-${i}}\n  cidr: 10.${n * 20 + i}.0.0/24\n` });
    }
    for (let i = 0; i < neutronPerNamespace.SecurityGroup; i++) {
      out.push({
        ns,
        kind: 'SecurityGroup',
        name: `sg-${i}`,
        doc: (v) => `${head('SecurityGroup', `sg-${i}`, ns)}  description: round ${v % 3}\n  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: ${2000 + i}, portRangeMax: ${2000 + i}, remoteIPPrefix: 10.0.0.0/8}\n`,
      });
    }
    for (let i = 0; i < neutronPerNamespace.Port; i++) {
      out.push({ ns, kind: 'Port', name: `port-${i}`, doc: (v) => `${head('Port', `port-${i}`, ns)}  networkRef: {name: net-${i}}\n  description: round ${v % 3}\n` });
    }
  }
  const ns = namespaces[0]!;
  out.push({ ns, kind: 'Image', name: 'raw', doc: () => `${head('Image', 'raw', ns)}  diskFormat: raw\n  source:\n    url: {url: "${imageUrl}"}\n` });
  out.push({ ns, kind: 'Flavor', name: 'tiny', doc: () => `${head('Flavor', 'tiny', ns)}  vcpus: 1\n  ram: 64\n  disk: 1\n` });
  for (let i = 0; i < 4; i++) {
    out.push({ ns, kind: 'VirtualMachine', name: `vm-${i}`, doc: () => `${head('VirtualMachine', `vm-${i}`, ns)}  flavorRef: {name: tiny}\n  imageRef: {name: raw}\n  networks: [{networkRef: {name: net-${i}}}]\n` });
    out.push({ ns, kind: 'Volume', name: `vol-${i}`, doc: (v) => `${head('Volume', `vol-${i}`, ns)}  size: 1\n  description: round ${v % 3}\n` });
  }
  return out;
}

let ws: Workspace;
let proxy: OpenStackFaultProxy;
let image: Server;
let all: Resource[];
let cloudsFile: string;
beforeAll(async () => {
  ws = new Workspace();
  image = createServer((_req, res) => res.end(Buffer.alloc(64 * 1024)));
  await new Promise<void>((resolve) => image.listen(0, '127.0.0.1', resolve));
  const addr = image.address();
  all = resources(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/disk.raw`);
  // The first volume create of the first faulty round loses its answer after Cinder made the volume (a single create, so the
  // proxy can name it): every run, even a one-seed run, has a lost create to adopt (test/README.md).
  proxy = await new OpenStackFaultProxy({ seed: firstSeed, rate: 0, slowMs: (apiTimeoutSeconds + 2) * 1000, first: { method: 'POST', paths: /\/volumes$/, fault: 'reset-after' } }).start();
  // The test bed's own cloud entry, with Keystone behind the proxy: the proxy rewrites the catalog, so every service is too.
  const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
  const entry = real.clouds[testCloudName]!;
  cloudsFile = join(ws.dir, 'clouds.yaml');
  writeFileSync(cloudsFile, stringify({ clouds: { [faultCloud]: { ...entry, auth: { ...entry.auth, auth_url: proxy.authUrl }, api_timeout: apiTimeoutSeconds } } }), { mode: 0o600 });
});
// Pruning 200 objects on the loaded shared bed can take longer than the default hook timeout.
afterAll(async () => {
  await proxy?.stop();
  image?.close();
  await ws?.dispose();
}, 1_200_000);

const events: EngineEvent[] = [];
function applyThroughProxy(): Promise<ApplyOutcome> {
  return applyPath({ path: ws.repo, cloud: faultCloud, cloudsFile, config: { ...ws.config, concurrency: 8 }, prune: true, allowMassDelete: true, log: (l) => ws.log.push(l), events: (e) => events.push(e) });
}

/** Applies until a run ends without errors (faults make some runs fail; each converges further). */
async function converge(label: string): Promise<number> {
  // honest: up to 8 runs; the loop ends by a clean run's return or the throw after it
  for (let run = 1; run <= 8; run++) {
    // A run whose observe read failed ends with that error before planning anything; the agent retries it on its next run, and so does this loop.
    const outcome = await applyThroughProxy().catch((e: unknown) => {
      if (!(e instanceof OpenStackError)) throw e;
      console.log(`faults ${label} run ${run}: failed before planning: ${e.message.slice(0, 160)}`);
      return undefined;
    });
    if (!outcome) continue;
    expect(outcome.diagnostics, label).toEqual([]);
    const errors = outcome.report!.errors;
    console.log(`faults ${label} run ${run}: created ${outcome.report!.created}, updated ${outcome.report!.updated}, deleted ${outcome.report!.deleted}, errors ${errors.length}${errors.length ? ` (${errors[0]!.message.slice(0, 160)})` : ''}`);
    // honest: the clean run is the success this helper waits for; its caller asserts the outcome
    if (errors.length === 0) return run;
  }
  throw new Error(`${label}: no clean run in 8 applies through the faults; last log lines:\n${ws.log.slice(-40).join('\n')}`);
}

/** The cloud as it is, listed directly (no proxy): name counts per namespace and kind. */
async function inventory(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const add = (ns: string, kind: string, name: string): void => {
    const key = `${ns}/${kind}/${name}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  };
  const projects = await ownedProjects(ws.cloud, ws.owner);
  // One project per namespace: a lost project create must not have made a second one.
  expect(projects.map((p) => p.namespace).sort()).toEqual([...namespaces].sort());
  const network = ws.cloud.client('network');
  const compute = await ws.cloud.adminCompute();
  const volume = ws.cloud.client('volumev3');
  const imageApi = ws.cloud.client('image');
  for (const p of projects) {
    for (const n of await network.list<{ name: string }>('/networks', 'networks', { project_id: p.id })) add(p.namespace, 'Network', n.name);
    for (const s of await network.list<{ name: string }>('/subnets', 'subnets', { project_id: p.id })) add(p.namespace, 'Subnet', s.name);
    for (const g of await network.list<{ name: string; security_group_rules: { port_range_min: number | null }[] }>('/security-groups', 'security_groups', { project_id: p.id })) {
      if (g.name === 'default') continue;
      add(p.namespace, 'SecurityGroup', g.name);
      // A lost rule create must not have left two rules either.
      for (const r of g.security_group_rules.filter((r) => r.port_range_min !== null)) add(p.namespace, 'SecurityGroupRule', `${g.name}:${r.port_range_min}`);
    }
    // Ports the VMs and DHCP made are not ours: only named ones count.
    for (const port of await network.list<{ name: string; device_owner: string }>('/ports', 'ports', { project_id: p.id })) if (port.device_owner === '') add(p.namespace, 'Port', port.name);
    for (const s of await compute.list<{ name: string }>('/servers/detail', 'servers', { all_tenants: true, project_id: p.id })) add(p.namespace, 'VirtualMachine', s.name);
    for (const v of await volume.list<{ name: string }>('/volumes/detail', 'volumes', { all_tenants: 1, project_id: p.id })) add(p.namespace, 'Volume', v.name);
    for (const i of await imageApi.list<{ name: string }>('/images', 'images', { owner: p.id })) add(p.namespace, 'Image', i.name);
  }
  return counts;
}

function expected(declared: Resource[]): Map<string, number> {
  const want = new Map<string, number>();
  for (const r of declared) {
    if (r.kind === 'Flavor') continue; // Nova flavors are not in a project: checked by the apply's own no-op below
    want.set(`${r.ns}/${r.kind}/${r.name}`, 1);
    if (r.kind === 'SecurityGroup') want.set(`${r.ns}/SecurityGroupRule/${r.name}:${2000 + Number(r.name.slice(3))}`, 1);
  }
  return want;
}

function write(declared: Resource[], variant: Map<string, number>): void {
  for (const ns of namespaces) ws.remove(`${ns}/all.yaml`);
  const files: Record<string, string> = {};
  for (const ns of namespaces) {
    const docs = declared.filter((r) => r.ns === ns).map((r) => r.doc(variant.get(`${r.ns}/${r.kind}/${r.name}`) ?? 0));
    if (docs.length) files[`${ns}/all.yaml`] = docs.join('---\n');
  }
  ws.write(files);
}

/** What depends on a resource (a subnet, port or VM on a network…) goes with it. */
function withDependents(removed: Set<string>, declared: Resource[]): Set<string> {
  for (const r of declared) {
    const key = `${r.ns}/${r.kind}/${r.name}`;
    const i = r.name.split('-')[1];
    if (r.kind === 'Subnet' || r.kind === 'Port' || r.kind === 'VirtualMachine') if (removed.has(`${r.ns}/Network/net-${i}`)) removed.add(key);
    // A port (or VM) on a network holds an address of its subnet: Neutron refuses to delete a subnet with addresses in use, as it would for a user.
    if (r.kind === 'Port' || r.kind === 'VirtualMachine') if (removed.has(`${r.ns}/Subnet/sub-${i}`)) removed.add(key);
    // A VM names its flavor and image: removing either alone is a validation error (ref.missing), as it would be for a user.
    if (r.kind === 'VirtualMachine' && (removed.has(`${r.ns}/Flavor/tiny`) || removed.has(`${r.ns}/Image/raw`))) removed.add(key);
  }
  return removed;
}

describe('OpenStack APIs that fail at random', () => {
  it(`converges through seeded faults at every API (${seeds} seeds, 200 resources in 5 projects): no duplicates, no orphans, lost creates adopted`, { timeout: Math.max(3_600_000, seeds * (soak ? 360_000 : 180_000)) }, async () => {
    const variant = new Map<string, number>();
    let declared = [...all];
    expect(all).toHaveLength(200);
    // honest: seeds is at least 1 (the default and the parsed KS_FAULT_SEEDS)
    for (let s = 0; s < seeds; s++) {
      const seed = firstSeed + s;
      const random = prng(seed * 7919);
      if (s > 0 && soak) {
        // The long version: everything goes, then everything is created again through the faults.
        proxy.reseed(seed, 0);
        write([], variant);
        await converge(`seed ${seed} (prune all)`);
        declared = [...all];
      } else if (s > 0) {
        // Remove about 4 % (with what depends on it), change about 5 %, bring back what the last seed removed.
        const removed = withDependents(new Set(all.filter(() => random() < 0.04).map((r) => `${r.ns}/${r.kind}/${r.name}`)), all);
        for (const r of all) if (random() < 0.05) variant.set(`${r.ns}/${r.kind}/${r.name}`, (variant.get(`${r.ns}/${r.kind}/${r.name}`) ?? 0) + 1);
        declared = all.filter((r) => !removed.has(`${r.ns}/${r.kind}/${r.name}`));
      }
      write(declared, variant);
      proxy.reseed(seed, 0.06);
      const runs = await converge(`seed ${seed}`);
      const have = await inventory();
      const want = expected(declared);
      const story = `seed ${seed} (replay with KS_FAULT_SEED=${seed} KS_FAULT_SEEDS=1), converged in ${runs} runs; faults so far ${JSON.stringify(Object.fromEntries(proxy.injected))}`;
      expect(new Map([...have].filter(([, n]) => n !== 1)), `duplicates: ${story}`).toEqual(new Map());
      expect([...have.keys()].sort(), `orphans or missing: ${story}`).toEqual([...want.keys()].sort());
      // Converged means a fault-free run has nothing left to do (this also covers the flavor).
      proxy.reseed(seed, 0);
      const check = await applyThroughProxy();
      const r = check.report!;
      expect({ created: r.created, updated: r.updated, deleted: r.deleted, replaced: r.replaced, errors: r.errors }, story).toEqual({ created: 0, updated: 0, deleted: 0, replaced: 0, errors: [] });
    }
    // The proxy saw creates that succeeded in the service and whose answers were lost: none of them made a second object.
    const lostCreates = proxy.lost.filter((l) => l.method === 'POST' && l.status >= 200 && l.status < 300 && l.name !== undefined && l.service !== 'identity');
    console.log(`faults: ${proxy.requests} requests, injected ${JSON.stringify(Object.fromEntries(proxy.injected))}, ${proxy.lost.length} answers lost after the work was done, ${lostCreates.length} of them creates`);
    expect(lostCreates.length).toBeGreaterThan(0);
    const adopted = events.filter((e) => e.type === 'adopted');
    expect(adopted.length, 'a create whose answer was lost is looked up and adopted').toBeGreaterThan(0);
    for (const e of adopted) expect(e.id).toBeTruthy();
  });
});
