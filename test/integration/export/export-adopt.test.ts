import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ApiCounters } from '../../../agent/openstack/counters.ts';
import { exportProjects } from '../../../agent/export/export.ts';
import { writeExport } from '../../../agent/export/write.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';
import { checkPath } from '../../../agent/validate/check-path.ts';
import { Workspace } from '../../support/apply.ts';
import { buildCloud, destroyCloud, type BuiltCloud } from '../../support/build-cloud.ts';

// Ordered: one cloud built by hand, exported, adopted, then changed through Git.
let ws: Workspace;
let built: BuiltCloud | undefined;
const made: Record<string, string> = {};

/** Every object of both projects in Neutron, Nova, Glance and Cinder, id → name: what adoption must leave as it is. */
async function neutronIds(): Promise<Record<string, string>> {
  const admin = await ws.cloud.adminApis();
  const out: Record<string, string> = {};
  for (const p of Object.values(built!.projects)) {
    for (const [path, key] of [['/networks', 'networks'], ['/subnets', 'subnets'], ['/ports', 'ports'], ['/routers', 'routers'], ['/security-groups', 'security_groups'], ['/floatingips', 'floatingips']] as const)
      for (const o of await admin.network.list<{ id: string; name?: string }>(path, key, { project_id: p })) out[o.id] = `${key}:${o.name ?? ''}`;
    for (const o of await admin.compute.list<{ id: string; name: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id: p })) out[o.id] = `servers:${o.name}`;
    for (const o of await admin.image.list<{ id: string; name: string }>('/images', 'images', { owner: p })) out[o.id] = `images:${o.name}`;
    for (const o of await admin.volume.list<{ id: string; name: string }>('/volumes/detail', 'volumes', { all_tenants: 1, project_id: p })) out[o.id] = `volumes:${o.name}`;
  }
  for (const o of await admin.compute.list<{ id: string; name: string }>('/flavors/detail', 'flavors', { is_public: 'None' })) if (o.id === built!.ids.flavor) out[o.id] = `flavors:${o.name}`;
  return out;
}

/** The load balancer and its children in Octavia, id → name and the figures adoption must leave as they are. */
async function octaviaIds(): Promise<Record<string, string>> {
  const api = ws.cloud.client('load-balancer');
  const project_id = built!.projects.alpha;
  const out: Record<string, string> = {};
  for (const c of ['loadbalancers', 'listeners', 'pools', 'healthmonitors'])
    for (const o of await api.list<{ id: string; name: string; connection_limit?: number }>(`/lbaas/${c}`, c, { project_id })) out[o.id] = `${c}:${o.name}${o.connection_limit !== undefined ? ` limit ${o.connection_limit}` : ''}`;
  for (const m of await api.list<{ id: string; name: string; address: string }>(`/lbaas/pools/${built!.ids.pool!}/members`, 'members')) out[m.id] = `members:${m.name} ${m.address}`;
  return out;
}

const building: Record<string, string> = {};

beforeAll(async () => {
  ws = new Workspace();
  // About 45 CLI calls, each a Python start: minutes on a busy bed.
  built = await buildCloud(ws.config.projectPrefix, building);
}, 1_800_000);

afterAll(async () => {
  await destroyCloud({ ids: { ...building, ...made } });
  await ws.dispose();
}, 900_000);

describe('taking over a cloud built without KupenStack: export, then adopt', () => {
  let before: Record<string, string>;

  it('export writes one namespace per project, references by name, and kupenstack validate accepts it', async () => {
    const result = await exportProjects({ cloud: ws.cloud, projects: [`${ws.config.projectPrefix}alpha`, built!.projects.beta], projectPrefix: ws.config.projectPrefix });
    await writeExport(ws.repo, result.namespaces, 'object');
    expect(readdirSync(ws.repo).sort()).toEqual(['alpha', 'beta']);
    const check = await checkPath(ws.repo, loadSchemaRegistry());
    const orphanFile = join(ws.repo, 'alpha', 'virtualmachine-orphan.yaml');
    expect(check.diagnostics, `${JSON.stringify(result.skipped)}\n${readdirSync(join(ws.repo, 'alpha')).includes('virtualmachine-orphan.yaml') ? readFileSync(orphanFile, 'utf8') : ''}`).toEqual([]);
    const alpha = readdirSync(join(ws.repo, 'alpha')).sort();
    const prefix = ws.config.projectPrefix;
    // The server's NIC and the floating IP's port are part of the VM and the floating IP, not Port manifests.
    expect(alpha.filter((f) => !f.startsWith('floatingip-'))).toEqual([`flavor-${prefix}secret.yaml`, 'image-tiny.yaml', `keypair-${prefix}ops.yaml`, 'loadbalancer-web-lb.yaml', 'network-app.yaml', 'network-shared-net.yaml', 'port-scratch.yaml', 'port-vip.yaml', 'projectquota-quotas.yaml', 'router-edge.yaml', 'securitygroup-db.yaml', 'securitygroup-web.yaml', 'subnet-app-subnet.yaml', 'subnet-shared-subnet.yaml', 'virtualmachine-web-1.yaml', 'volume-data.yaml']);
    const fips = alpha.filter((f) => f.startsWith('floatingip-'));
    expect(fips).toHaveLength(1);
    const read = (ns: string, f: string): string => readFileSync(join(ws.repo, ns, f), 'utf8');
    // Nova, Glance, Cinder: references by name, only what differs from the defaults, no secret.
    expect(read('alpha', 'virtualmachine-web-1.yaml')).toMatch(new RegExp(`adopt: true\n {2}flavorRef:\n {4}name: ${prefix}secret\n {2}imageRef:\n {4}name: tiny\n {2}networks:\n {4}- networkRef:\n {8}name: app\n {6}fixedIP: 10.71.0.30\n {2}securityGroupRefs:\n {4}- name: web\n {2}keyPairRef:\n {4}name: ${prefix}ops\n {2}volumes:\n {4}- volumeRef:\n {8}name: data\n {2}metadata:\n {4}role: web\n$`));
    expect(read('alpha', `keypair-${prefix}ops.yaml`)).toMatch(new RegExp(`spec:\n {2}managementPolicy: unmanaged\n {2}import:\n {4}id: ${prefix}ops\n$`));
    expect(read('alpha', `flavor-${prefix}secret.yaml`)).toMatch(/adopt: true\n {2}vcpus: 1\n {2}ram: 64\n {2}disk: 1\n {2}description: the small one\n$/);
    expect(read('alpha', 'image-tiny.yaml')).toMatch(/adopt: true\n {2}diskFormat: raw\n {2}containerFormat: bare\n {2}minRam: 32\n {2}properties:\n[^]*os_distro: cirros/);
    expect(read('alpha', 'volume-data.yaml')).toMatch(/adopt: true\n {2}size: 1\n {2}description: app data\n$/);
    expect(read('alpha', fips[0]!)).toMatch(/externalNetwork:\n {4}network:\n {6}id: [0-9a-f-]+\n {2}floatingIPAddress: [0-9.]+\n {2}description: web entry\n {2}vmRef:\n {4}name: web-1\n {2}fixedIPAddress: 10.71.0.30\n$/);
    expect(read('alpha', 'projectquota-quotas.yaml')).toMatch(/adopt: true\n {2}compute:\n {4}instances: 7\n {2}network:\n {4}ports: 77\n {2}blockStorage:\n {4}volumes: 5\n$/);
    expect(alpha.map((f) => read('alpha', f)).join('\n')).not.toMatch(/ssh-ed25519|user_data|userData|password/);
    // Planted secrets (the server's user data with a password in it, an application credential's secret): in no file, not in what export returned.
    const everything = ['alpha', 'beta'].flatMap((ns) => readdirSync(join(ws.repo, ns)).map((f) => read(ns, f))).join('\n') + JSON.stringify(result);
    expect(built!.planted).toHaveLength(3);
    for (const secret of built!.planted) expect(everything.includes(secret), 'a planted secret reached the export').toBe(false);
    // A server whose image was deleted is not adopted: left out, with the reason naming it.
    expect(result.skipped.filter((l) => l.includes('/VirtualMachine/'))).toEqual([`alpha/VirtualMachine/${built!.ids['server-orphan']!}: not adopted: its image ${built!.ids['image-gone']!} was deleted from Glance, so no imageRef can name it; declare it by hand (a bootVolume, or import it observe-only with managementPolicy: unmanaged)`]);
    // The server has user data: the export says it left it out, and how to manage it.
    expect(result.notes).toEqual([`alpha/VirtualMachine/web-1: has user data, not written (it may hold secrets) and left as it is; to manage it, put it in a Secret and set spec.userDataSecretRef`]);
    // Octavia: the load balancer made with the CLI is one managed manifest with its whole tree; the member at the server's address is written by vmRef.
    expect((parse(read('alpha', 'loadbalancer-web-lb.yaml')) as { spec: unknown }).spec).toEqual({
      import: { id: built!.ids.lb, adopt: true },
      description: 'front door',
      vip: { subnetRef: { name: 'app-subnet' } },
      listeners: [
        {
          name: 'http',
          protocol: 'HTTP',
          port: 80,
          pool: {
            members: [
              { address: '10.71.0.99', port: 8080, name: 'backup' },
              { vmRef: { name: 'web-1' }, port: 8080 },
            ],
            healthMonitor: { type: 'HTTP', delay: 5, timeout: 3, maxRetries: 3, urlPath: '/healthz' },
          },
        },
      ],
    });
    // References, not ids: the router's interfaces, the port's address, the groups naming each other.
    expect(read('alpha', 'router-edge.yaml')).toMatch(/interfaces:\n {4}- subnetRef:\n {8}name: app-subnet\n {4}- subnetRef:\n {8}name: shared-subnet/);
    expect(read('alpha', 'router-edge.yaml')).toMatch(/routes:\n {4}- destination: 192.168.50.0\/24\n {6}nextHop: 10.71.0.254/);
    expect(read('alpha', 'port-vip.yaml')).toMatch(/fixedIPs:\n {4}- subnetRef:\n {8}name: app-subnet\n {6}ipAddress: 10.71.0.10\n {2}securityGroupRefs:\n {4}- name: web/);
    expect(read('alpha', 'securitygroup-db.yaml')).toMatch(/remoteGroupRef:\n {8}name: web/);
    expect(read('alpha', 'network-shared-net.yaml')).toMatch(/name: shared-net\n[^]*spec:\n {2}import:\n {4}id: [0-9a-f-]+\n {4}adopt: true\n {2}name: Shared Net\n {2}shared: true/);
    // Another project's shared network is an observe-only import in beta.
    expect(read('beta', 'network-shared-net.yaml')).toMatch(/managementPolicy: unmanaged\n {2}import:\n {4}id: /);
    // The default group Neutron made is written only where an object names it (none here), never adopted; no OpenStack default (mtu, DHCP) is written.
    expect(readdirSync(join(ws.repo, 'alpha')).map((f) => read('alpha', f)).join('\n')).not.toMatch(/mtu|enableDHCP|allocationPools/);
    // Two projects: each kind listed once cloud-wide, counted where the requests leave (networks twice: the shared ones for the imports' names;
    // images: the list, and one read of the deleted image the orphan booted from, outside every list).
    expect(result.calls).toMatchObject({ 'network GET /networks': 2, 'network GET /subnets': 1, 'network GET /ports': 1, 'network GET /routers': 1, 'network GET /security-groups': 1, 'network GET /floatingips': 1, 'compute GET /servers': 1, 'image GET /images': 2, 'volumev3 GET /volumes': 1 });
  });

  let lbBefore: Record<string, string>;
  it('apply adopts every object: only adopt in the plan, only marker writes, every id unchanged', async () => {
    before = await neutronIds();
    lbBefore = await octaviaIds();
    const plan = await ws.plan();
    expect(plan.report!.errors).toEqual([]);
    expect([...new Set(plan.report!.changes.map((c) => c.action))]).toEqual(['adopt']);
    const counters = new ApiCounters();
    const r = await ws.apply({ counters });
    expect(r.diagnostics).toEqual([]);
    expect(r.report!.errors).toEqual([]);
    const actions = [...new Set(r.report!.changes.map((c) => c.action))];
    expect(actions).toEqual(['adopt']);
    const adopted = r.report!.changes.length;
    // alpha: 2 networks, 2 subnets, 2 groups, 2 ports, 1 router, 1 floating IP, 1 flavor, 1 image, 1 volume, 1 server, 1 load balancer, the quotas; beta: 1 network, 1 subnet, 1 port
    expect(adopted).toBe(19);
    expect(r.report).toMatchObject({ created: 0, updated: 0, deleted: 0, replaced: 0 });
    // One marker per object (a server's is two: its owner tag and its metadata; a load balancer's one more per child:
    // listener, pool, two members, monitor), and per project its two tags and the agent's role in it.
    const writes = Object.entries(counters.byCollection()).filter(([k]) => !/ (GET|HEAD) /.test(k));
    expect(r.report!.apiCalls.write, JSON.stringify(writes)).toBe(adopted + 1 + 5 + 2 * 3);
    // Octavia's writes are the six tag PUTs (the load balancer and its five children), nothing else.
    const octaviaWrites = writes.filter(([k]) => k.startsWith('load-balancer '));
    expect(octaviaWrites.reduce((n, [, c]) => n + c, 0)).toBe(6);
    expect(octaviaWrites.length).toBeGreaterThan(0);
    expect(octaviaWrites.filter(([k]) => !k.startsWith('load-balancer PUT '))).toEqual([]);
    expect(await neutronIds()).toEqual(before);
    expect(await octaviaIds()).toEqual(lbBefore);
    // Every child carries the load balancer's owner and ref now.
    const api = ws.cloud.client('load-balancer');
    const tagged = await Promise.all([
      api.get<{ listener: { tags: string[] } }>(`/lbaas/listeners/${built!.ids.listener!}`).then((x) => x.listener.tags),
      api.get<{ pool: { tags: string[] } }>(`/lbaas/pools/${built!.ids.pool!}`).then((x) => x.pool.tags),
      api.get<{ healthmonitor: { tags: string[] } }>(`/lbaas/healthmonitors/${built!.ids.monitor!}`).then((x) => x.healthmonitor.tags),
      ...['member-web-1', 'member-backup'].map((k) => api.get<{ member: { tags: string[] } }>(`/lbaas/pools/${built!.ids.pool!}/members/${built!.ids[k]!}`).then((x) => x.member.tags)),
    ]);
    expect(tagged.filter((t) => t.includes(`kupenstack-owner:${ws.owner}`) && t.includes('kupenstack-ref:LoadBalancer/web-lb'))).toHaveLength(5);
    // Nor does a planted secret reach the plan or what plan and apply logged.
    const said = JSON.stringify(plan.report) + JSON.stringify(r.report) + ws.log.join('\n');
    expect(built!.planted).toHaveLength(3);
    for (const secret of built!.planted) expect(said.includes(secret), 'a planted secret reached a plan or a log').toBe(false);
  }, 600_000);

  it('a second apply makes 0 writes', async () => {
    const r = await ws.apply();
    expect(r.report!.errors).toEqual([]);
    expect(r.report!.changes).toEqual([]);
    expect(r.report!.apiCalls.write).toBe(0);
    expect(await neutronIds()).toEqual(before);
    expect(await octaviaIds()).toEqual(lbBefore);
  }, 600_000);

  it('after adoption a new rule and a bigger volume apply as updates (the volume extended in Cinder) and a new subnet as a create', async () => {
    const file = 'alpha/securitygroup-web.yaml';
    ws.write({ [file]: ws.read(file).replace(/ {2}rules:\n/, '  rules:\n    - direction: ingress\n      protocol: tcp\n      portRangeMin: 22\n      portRangeMax: 22\n      remoteIPPrefix: 10.0.0.0/8\n') });
    ws.write({ 'alpha/subnet-extra.yaml': 'apiVersion: kupenstack.io/v1alpha1\nkind: Subnet\nmetadata: {name: extra, namespace: alpha}\nspec: {networkRef: {name: app}, cidr: 10.71.8.0/24}\n' });
    ws.write({ 'alpha/volume-data.yaml': ws.read('alpha/volume-data.yaml').replace('size: 1', 'size: 2') });
    // The adopted load balancer: a connection limit on its listener and a third member.
    const lbFile = 'alpha/loadbalancer-web-lb.yaml';
    const lb = parse(ws.read(lbFile)) as { spec: { listeners: { connectionLimit?: number; pool: { members: Record<string, unknown>[] } }[] } };
    lb.spec.listeners[0]!.connectionLimit = 500;
    lb.spec.listeners[0]!.pool.members.push({ address: '10.71.0.98', port: 8080, name: 'spare' });
    ws.write({ [lbFile]: stringify(lb) });
    const r = await ws.apply();
    expect(r.report!.errors).toEqual([]);
    expect(r.report).toMatchObject({ created: 1, updated: 3, deleted: 0, replaced: 0 });
    const lbAfter = await octaviaIds();
    const added = Object.keys(lbAfter).filter((id) => !(id in lbBefore));
    expect(added.map((id) => lbAfter[id])).toEqual(['members:spare 10.71.0.98']);
    expect(lbAfter[built!.ids.listener!]).toBe('listeners:http limit 500');
    const { [added[0]!]: _spare, [built!.ids.listener!]: _limited, ...unchanged } = lbAfter;
    const { [built!.ids.listener!]: _was, ...unchangedBefore } = lbBefore;
    expect(unchanged).toEqual(unchangedBefore);
    const grown = await ws.cloud.client('volumev3').get<{ volume: { size: number } }>(`/volumes/${built!.ids.volume!}`);
    expect(grown.volume.size).toBe(2);
    const rules = await ws.cloud.client('network').list<{ port_range_min: number | null }>('/security-group-rules', 'security_group_rules', { security_group_id: built!.ids['sg-web']! });
    expect(rules.map((x) => x.port_range_min).filter((x) => x !== null).sort()).toEqual([22, 443, 8080]);
    const [extra] = await ws.cloud.client('network').list<{ id: string }>('/subnets', 'subnets', { network_id: built!.ids['net-app']!, cidr: '10.71.8.0/24' });
    expect(extra?.id).toBeDefined();
    const { [extra!.id]: _new, ...after } = await neutronIds();
    expect(after).toEqual(before);
  }, 600_000);

  it('removing an adopted object\'s file with --prune detaches it by default; with onDelete: delete it is deleted', async () => {
    const network = ws.cloud.client('network');
    rmSync(join(ws.repo, 'alpha', 'port-vip.yaml'));
    const file = 'alpha/port-scratch.yaml';
    ws.write({ [file]: ws.read(file).replace(/ {2}import:/, '  onDelete: delete\n  import:') });
    expect((await ws.apply({ prune: true })).report).toMatchObject({ deleted: 0, errors: [] });
    expect(await network.find(`/ports/${built!.ids['port-vip']!}`)).toBeDefined();
    ws.remove(file);
    const r = await ws.apply({ prune: true });
    expect(r.report).toMatchObject({ deleted: 1, errors: [] });
    expect(r.report!.warnings.join('\n')).toMatch(/alpha\/Port\/vip: no longer declared and left in OpenStack \(onDelete: detach\)/);
    expect(await network.find(`/ports/${built!.ids['port-scratch']!}`)).toBeUndefined();
    expect(await network.find(`/ports/${built!.ids['port-vip']!}`)).toBeDefined();
  }, 600_000);
});
