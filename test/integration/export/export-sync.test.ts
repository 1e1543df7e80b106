import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportProjects } from '../../../agent/export/export.ts';
import { writeExport } from '../../../agent/export/write.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { parseDescriptionMarker } from '../../../agent/ownership/marker.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from '../controller/harness.ts';

/*
 * The take-over in the cluster: a project built with Neutron's own API (no
 * KupenStack), exported, pushed to the test bed's Git server and pulled by a
 * Sync; the controller adopts every object. Read back from the API server
 * (every CR Ready, status.id the original id) and from Neutron (the same ids
 * before and after: nothing created, nothing recreated).
 */
const run = randomBytes(3).toString('hex');
const ns = `export-sync-${run}`;
const prefix = 'ks-';
const system = 'kupenstack-system';
const syncName = `export-sync-${run}`;
const gitSecret = `export-sync-${run}-git`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const network = cloud.client('network');
const kinds = ['network', 'subnet', 'securitygroup', 'port', 'router'];
const made: { project?: string; router?: string; subnet?: string; network?: string; port?: string; groups: string[] } = { groups: [] };
let controller: ControllerProcess | undefined;
let git: TestRepo | undefined;

interface Cr { kind: string; metadata: { name: string }; status?: { id?: string; conditions?: { type: string; status: string; reason: string; message: string }[] } }

/** Every object of the project in Neutron, id → collection: what adoption must leave as it is. */
async function neutronIds(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [path, key] of [['/networks', 'networks'], ['/subnets', 'subnets'], ['/ports', 'ports'], ['/routers', 'routers'], ['/security-groups', 'security_groups']] as const)
    for (const o of await network.list<{ id: string }>(path, key, { project_id: made.project })) out[o.id] = key;
  return out;
}

const crs = (): Cr[] => getJson<{ items: Cr[] }>(['get', kinds.map((k) => `${k}.kupenstack.io`).join(','), '-n', ns]).items;
const ready = (cr: Cr): boolean => cr.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** A small project made the way a person makes one, with Neutron's API: a network and subnet, two groups naming each other, a port with its address, a router with an interface. */
async function buildProject(): Promise<void> {
  const admin = await cloud.adminApis();
  made.project = (await cloud.identity.post<{ project: { id: string } }>('/projects', { project: { name: `${prefix}${ns}`, domain_id: 'default' } })).project.id;
  const project_id = made.project;
  made.network = (await admin.network.post<{ network: { id: string } }>('/networks', { network: { name: 'app', project_id } })).network.id;
  made.subnet = (await admin.network.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'app-subnet', network_id: made.network, project_id, ip_version: 4, cidr: '10.72.0.0/24', enable_dhcp: false } })).subnet.id;
  const group = async (name: string): Promise<string> => {
    const id = (await admin.network.post<{ security_group: { id: string } }>('/security-groups', { security_group: { name, project_id } })).security_group.id;
    made.groups.push(id);
    return id;
  };
  const web = await group('web');
  const db = await group('db');
  await admin.network.post('/security-group-rules', { security_group_rule: { security_group_id: db, project_id, direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: 5432, port_range_max: 5432, remote_group_id: web } });
  made.port = (await admin.network.post<{ port: { id: string } }>('/ports', { port: { name: 'vip', network_id: made.network, project_id, fixed_ips: [{ subnet_id: made.subnet, ip_address: '10.72.0.10' }], security_groups: [web] } })).port.id;
  made.router = (await admin.network.post<{ router: { id: string } }>('/routers', { router: { name: 'edge', project_id } })).router.id;
  await admin.network.put(`/routers/${made.router}/add_router_interface`, { subnet_id: made.subnet });
}

beforeAll(async () => {
  // The CRDs as deploy/ has them (the same files every controller test applies).
  prepareSyncBed({ system, namespaces: [ns], optIn: syncName, gitopsIn: ns, gitSecret });
  await buildProject();

  const config = join(mkdtempSync(join(tmpdir(), 'ks-export-sync-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  // Only this run's Sync and namespace: other runs on the bed are not driven.
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), ['-c', config, '--cloud', testCloudName, '--owner', `xs${run}`, '--project-prefix', prefix, '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${syncName}`, '--sync-selector', `kupenstack.io/test-run=${run}`]);
  await controller.start();
}, 600_000);

afterAll(async () => {
  kubectl(['delete', 'sync.kupenstack.io', syncName, '--wait=false']);
  await controller?.stop();
  // Adopted objects are detached by default: the CRs go (finalizers cleared, the controller is stopped), the test removes what it built.
  for (const k of kinds) for (const name of kubectl(['get', `${k}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  kubectl(['delete', 'secret', gitSecret, '-n', system]);
  const gone = (p: Promise<unknown>): Promise<unknown> => p.catch(() => undefined);
  if (made.router) {
    await gone(network.put(`/routers/${made.router}/remove_router_interface`, { subnet_id: made.subnet }));
    await gone(network.remove(`/routers/${made.router}`));
  }
  if (made.port) await gone(network.remove(`/ports/${made.port}`));
  if (made.network) await gone(network.remove(`/networks/${made.network}`));
  for (const g of made.groups) await gone(network.remove(`/security-groups/${g}`));
  if (made.project) {
    for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: made.project }).catch(() => [])) await gone(network.remove(`/security-groups/${g.id}`));
    await gone(cloud.identity.remove(`/projects/${made.project}`));
  }
  await git?.dispose();
}, 300_000);

describe('taking over a cloud in the cluster: the export through Git and a Sync', () => {
  it('ends with every CR Ready on its original id, and Neutron holds the same objects as before (0 creates)', async () => {
    const before = await neutronIds();
    const result = await exportProjects({ cloud, projects: [made.project!], projectPrefix: prefix });
    expect(result.namespaces.map((n) => n.namespace)).toEqual([ns]);
    const out = mkdtempSync(join(tmpdir(), 'ks-export-sync-out-'));
    await writeExport(out, result.namespaces, 'object');
    const files = Object.fromEntries(readdirSync(join(out, ns)).map((f) => [`${ns}/${f}`, readFileSync(join(out, ns, f), 'utf8')]));
    rmSync(out, { recursive: true, force: true });
    expect(Object.keys(files).sort()).toEqual([`${ns}/network-app.yaml`, `${ns}/port-vip.yaml`, `${ns}/router-edge.yaml`, `${ns}/securitygroup-db.yaml`, `${ns}/securitygroup-web.yaml`, `${ns}/subnet-app-subnet.yaml`]);
    const original: Record<string, string> = { 'Network/app': made.network!, 'Subnet/app-subnet': made.subnet!, 'SecurityGroup/web': made.groups[0]!, 'SecurityGroup/db': made.groups[1]!, 'Port/vip': made.port!, 'Router/edge': made.router! };

    git = await TestRepo.create('export-sync');
    await git.commit(files, 'kupenstack export');
    git.push();
    kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'kupenstack.io/v1alpha1',
        kind: 'Sync',
        metadata: { name: syncName, labels: { 'kupenstack.io/test-run': run } },
        spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, interval: '1m', retryInterval: '2s', serviceAccountName: 'gitops', serviceAccountNamespace: ns },
      }),
    });
    await until('every exported CR Ready', () => Promise.resolve(crs().length === 6 && crs().every(ready)), 240_000, 1000).catch((err: unknown) => {
      // What stands in the way, in the failure itself: each CR's Ready condition and the controller's last lines.
      const state = crs().map((cr) => `${cr.kind}/${cr.metadata.name}: ${JSON.stringify(cr.status?.conditions?.find((c) => c.type === 'Ready') ?? 'no Ready')}`);
      const sync = JSON.stringify(getJson<{ status?: unknown }>(['get', 'sync.kupenstack.io', syncName]).status);
      throw new Error(`${String(err)}\nCRs:\n${state.join('\n')}\nSync: ${sync}\ncontroller log:\n${controller!.log().slice(-6000)}`, { cause: err });
    });
    const ids = Object.fromEntries(crs().map((cr) => [`${cr.kind}/${cr.metadata.name}`, cr.status?.id]));
    expect(ids).toEqual(original);
    // Nothing created or recreated: Neutron's objects of the project are the same ids as before the Sync.
    expect(await neutronIds()).toEqual(before);
    // The adoption's writes are markers: each object's description now names its manifest (Neutron's marker).
    const collection: Record<string, [string, string]> = { Network: ['networks', 'network'], Subnet: ['subnets', 'subnet'], SecurityGroup: ['security-groups', 'security_group'], Port: ['ports', 'port'], Router: ['routers', 'router'] };
    const markers: Record<string, string | undefined> = {};
    for (const [ref, id] of Object.entries(original)) {
      const [path, key] = collection[ref.split('/')[0]!]!;
      const raw = (await network.get<Record<string, { description?: string }>>(`/${path}/${id}`))[key]!;
      markers[ref] = parseDescriptionMarker(raw.description).marker?.ref;
    }
    expect(markers).toEqual(Object.fromEntries(Object.keys(original).map((ref) => [ref, ref])));
  }, 420_000);
});
