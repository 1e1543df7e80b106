import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../../agent/openstack/service.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { runApply } from '../../support/apply-child.ts';
import { testCloudName } from '../../support/context.ts';

/*
 * LoadBalancer against the bed's real Octavia (API, database, worker over
 * RabbitMQ, health manager, housekeeping) with its no-op amphora, compute and
 * network drivers: the load balancer, listener, pool, members and monitor are
 * real Octavia objects that go PENDING_* → ACTIVE through the worker's flows;
 * no amphora VM, VIP port or haproxy exists (see the README's test-bed notes).
 * Everything is read back with the admin's own Octavia API and CLI.
 */

type Raw = Record<string, unknown>;
let ws: Workspace;
let server: Server;
let port = 0;
let lbApi: ServiceClient;
const ns = 'lb';

// `loadbalancer status show` prints JSON of its own (it takes no -f).
const openstack = (...args: string[]): Raw => JSON.parse(execFileSync('openstack', ['--os-cloud', testCloudName, ...args], { encoding: 'utf8' })) as Raw;

interface Spec {
  listenerPort: number;
  members: string[];
  weightA?: number;
}

const lbManifest = (name: string, s: Spec): string =>
  `${head('LoadBalancer', name, ns)}  vip: {subnetRef: {name: sub}}\n  listeners:\n    - name: http\n      protocol: HTTP\n      port: ${s.listenerPort}\n      pool:\n        lbAlgorithm: ROUND_ROBIN\n        members:\n${s.members
    .map((m) => `          - {vmRef: {name: ${m}}, port: 8080${m === 'web-a' && s.weightA ? `, weight: ${s.weightA}` : ''}}\n`)
    .join('')}        healthMonitor: {type: HTTP, delay: 5, timeout: 3, maxRetries: 3, urlPath: /healthz}\n`;

const tenant = (): string =>
  [
    `${head('Network', 'net', ns)}  mtu: 1400\n`,
    `${head('Subnet', 'sub', ns)}  networkRef: {name: net}\n  cidr: 10.94.0.0/24\n`,
    `${head('Flavor', 'tiny', ns)}  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('Image', 'raw', ns)}  diskFormat: raw\n  source:\n    url: {url: "http://127.0.0.1:${port}/disk.raw"}\n`,
    ...['web-a', 'web-b'].map((n) => `${head('VirtualMachine', n, ns)}  flavorRef: {name: tiny}\n  imageRef: {name: raw}\n  networks: [{networkRef: {name: net}}]\n`),
  ].join('---\n');

const write = (s: Spec): void => ws.write({ 'tenant.yaml': tenant(), 'lb.yaml': lbManifest('web', s) });

async function projectId(): Promise<string> {
  const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
  return project!.id;
}

/** The project's load balancers and their children, as Octavia's API lists them to the admin. */
async function octaviaState(): Promise<{ lbs: Raw[]; listeners: Raw[]; pools: Raw[]; members: Raw[]; monitors: Raw[] }> {
  const project_id = await projectId();
  const [lbs, listeners, pools, monitors] = await Promise.all(
    ['loadbalancers', 'listeners', 'pools', 'healthmonitors'].map((c) => lbApi.list<Raw>(`/lbaas/${c}`, c, { project_id })),
  );
  const members = (await Promise.all(pools!.map((p) => lbApi.list<Raw>(`/lbaas/pools/${String(p.id)}/members`, 'members')))).flat();
  return { lbs: lbs!, listeners: listeners!, pools: pools!, members, monitors: monitors! };
}

/** The VMs' fixed addresses, as Neutron holds them. */
async function vmAddresses(): Promise<Record<string, string>> {
  const project_id = await projectId();
  const servers = await (await ws.cloud.adminCompute()).list<{ id: string; name: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id });
  const out: Record<string, string> = {};
  for (const s of servers) {
    const [p] = await ws.cloud.client('network').list<{ fixed_ips: { ip_address: string }[] }>('/ports', 'ports', { device_id: s.id });
    out[s.name] = p!.fixed_ips[0]!.ip_address;
  }
  return out;
}

beforeAll(async () => {
  ws = new Workspace();
  lbApi = ws.cloud.client('load-balancer');
  server = createServer((_req, res) => res.end(Buffer.alloc(64 * 1024)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  port = typeof addr === 'object' && addr ? addr.port : 0;
});

afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('LoadBalancer on a real Octavia', () => {
  it('a manifest with two VM members, a listener on :80 and a monitor: Octavia shows all of it ACTIVE', async () => {
    write({ listenerPort: 80, members: ['web-a', 'web-b'] });
    const applied = await ws.apply();
    expect(applied.diagnostics).toEqual([]);
    expect(applied.report!.errors, ws.log.join('\n')).toEqual([]);

    const o = await octaviaState();
    expect(o.lbs).toHaveLength(1);
    const lb = o.lbs[0]!;
    expect(lb).toMatchObject({ name: 'web', provisioning_status: 'ACTIVE' });
    expect(lb.tags).toEqual(expect.arrayContaining([`kupenstack-owner:${ws.owner}`, 'kupenstack-ref:LoadBalancer/web']));
    expect(o.listeners.map((l) => [l.name, l.protocol, l.protocol_port, l.provisioning_status])).toEqual([['http', 'HTTP', 80, 'ACTIVE']]);
    expect(o.pools.map((p) => [p.protocol, p.lb_algorithm, p.provisioning_status])).toEqual([['HTTP', 'ROUND_ROBIN', 'ACTIVE']]);
    expect(o.monitors.map((m) => [m.type, m.delay, m.timeout, m.max_retries, m.url_path, m.provisioning_status])).toEqual([['HTTP', 5, 3, 3, '/healthz', 'ACTIVE']]);
    // The members are the VMs' fixed addresses on the VIP's subnet, as Neutron gave them.
    const addresses = await vmAddresses();
    expect(o.members.map((m) => [m.name, m.address, m.protocol_port, m.provisioning_status]).sort()).toEqual([
      ['web-a', addresses['web-a'], 8080, 'ACTIVE'],
      ['web-b', addresses['web-b'], 8080, 'ACTIVE'],
    ]);
    // Octavia's own status tree (the CLI), the way an operator reads it.
    const tree = openstack('loadbalancer', 'status', 'show', String(lb.id)) as { loadbalancer: { provisioning_status: string; listeners: { pools: { members: unknown[]; health_monitor: { provisioning_status: string } }[] }[] } };
    expect(tree.loadbalancer.provisioning_status).toBe('ACTIVE');
    expect(tree.loadbalancer.listeners[0]!.pools[0]!.members).toHaveLength(2);
    expect(tree.loadbalancer.listeners[0]!.pools[0]!.health_monitor.provisioning_status).toBe('ACTIVE');

    // Converged: a second apply changes nothing.
    const again = await ws.apply();
    expect(again.report).toMatchObject({ created: 0, updated: 0, replaced: 0, errors: [] });
  });

  it('a member weight changes in place; a new listener port keeps the load balancer and its VIP', async () => {
    const before = await octaviaState();
    const memberA = before.members.find((m) => m.name === 'web-a')!;
    write({ listenerPort: 80, members: ['web-a', 'web-b'], weightA: 5 });
    const plan = await ws.plan();
    const change = plan.report!.changes.find((c) => c.address === `${ns}/LoadBalancer/web`)!;
    expect(change).toMatchObject({ action: 'update' });
    expect(change.fields.map((f) => f.path)).toEqual(['listeners']);
    expect((await ws.apply()).report!.errors, ws.log.join('\n')).toEqual([]);
    const weighted = await octaviaState();
    expect(weighted.members.find((m) => m.name === 'web-a')).toMatchObject({ id: memberA.id, weight: 5, provisioning_status: 'ACTIVE' });

    // Octavia has no call that changes a listener's port: the listener (and what hangs under it) is made again,
    // on the same load balancer, same VIP; the plan says update, not replace.
    write({ listenerPort: 8080, members: ['web-a', 'web-b'], weightA: 5 });
    const portPlan = (await ws.plan()).report!.changes.find((c) => c.address === `${ns}/LoadBalancer/web`)!;
    expect(portPlan).toMatchObject({ action: 'update' });
    expect((await ws.apply()).report!.errors, ws.log.join('\n')).toEqual([]);
    const after = await octaviaState();
    expect(after.lbs.map((l) => [l.id, l.vip_address, l.provisioning_status])).toEqual([[before.lbs[0]!.id, before.lbs[0]!.vip_address, 'ACTIVE']]);
    expect(after.listeners.map((l) => [l.protocol_port, l.provisioning_status])).toEqual([[8080, 'ACTIVE']]);
    expect(after.members).toHaveLength(2);
    expect(after.monitors).toHaveLength(1);
  });

  it('removing a member deletes only that member', async () => {
    const before = await octaviaState();
    write({ listenerPort: 8080, members: ['web-a'], weightA: 5 });
    expect((await ws.apply()).report!.errors, ws.log.join('\n')).toEqual([]);
    const after = await octaviaState();
    expect(after.members.map((m) => m.id)).toEqual([before.members.find((m) => m.name === 'web-a')!.id]);
    // Everything else is the same object it was.
    expect(after.lbs.map((l) => l.id)).toEqual(before.lbs.map((l) => l.id));
    expect(after.listeners.map((l) => l.id)).toEqual(before.listeners.map((l) => l.id));
    expect(after.pools.map((p) => p.id)).toEqual(before.pools.map((p) => p.id));
    expect(after.monitors.map((m) => m.id)).toEqual(before.monitors.map((m) => m.id));
  });

  it('kill -9 in the middle of a create: the next run adopts the load balancer, no second one', async () => {
    ws.write({ 'lb2.yaml': lbManifest('killed', { listenerPort: 80, members: ['web-a'] }) });
    writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir }));
    const child = runApply(ws, []);
    const project_id = await projectId();
    const killed = (): Promise<Raw[]> => lbApi.list<Raw>('/lbaas/loadbalancers', 'loadbalancers', { project_id, tags: 'kupenstack-ref:LoadBalancer/killed' });
    // Killed as soon as Octavia holds the load balancer: the run is waiting for it to leave PENDING_CREATE (or just past it).
    for (const deadline = Date.now() + 300_000; (await killed()).length === 0; await sleep(50)) {
      if (Date.now() > deadline) throw new Error(`the CLI never created the load balancer:\n${child.stderr()}`);
      const exited = await Promise.race([child.done, sleep(0).then(() => 'running' as const)]);
      if (exited !== 'running') throw new Error(`the CLI exited (${exited}) before creating the load balancer:\n${child.stderr()}`);
    }
    child.kill();
    expect(await child.done).toBeNull();
    const first = await killed();
    expect(first).toHaveLength(1);

    const resumed = await ws.apply();
    expect(resumed.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(resumed.report!.created).toBe(0);
    const after = await killed();
    expect(after.map((l) => [l.id, l.provisioning_status])).toEqual([[first[0]!.id, 'ACTIVE']]);
    const o = await octaviaState();
    expect(o.lbs).toHaveLength(2);
    expect(o.listeners.filter((l) => (l.loadbalancers as { id: string }[])[0]!.id === first[0]!.id)).toHaveLength(1);
  });

  it('a pruned manifest takes its load balancer and every child with it', async () => {
    ws.remove('lb.yaml');
    ws.remove('lb2.yaml');
    const pruned = await ws.apply({ prune: true });
    expect(pruned.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(pruned.report!.deleted).toBe(2);
    // Deleted without cascade: Octavia refuses a load balancer that still has children, so this also says they went first.
    const o = await octaviaState();
    expect(o).toEqual({ lbs: [], listeners: [], pools: [], members: [], monitors: [] });
  });
});
