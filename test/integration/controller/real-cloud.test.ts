import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenStackCloudStatus } from '../../../agent/model/kinds.generated.ts';
import { buildCharts } from '../../charts/build.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { onRealNode, realNode } from '../../testbed/node/peer.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * The cloud for real (issue #29): an OpenStackCloud 2022.2 of the infrastructure, Keystone,
 * Glance, Placement, Neutron and Nova, applied with kubectl, driven by `kupenstack controller` started
 * without --cloud (it installs the cloud, so it cannot need one), its charts run as real pods
 * on the test bed's real node from images built from Debian bookworm's packages
 * (test/testbed/os-images): mariadb, memcached and rabbitmq; keystone's db-init, db_sync and
 * bootstrap Jobs and uwsgi Keystone whose readiness probe GETs /v3; glance's and placement's
 * db-init, db-sync (glance-manage, placement-manage) and ks-service/ks-endpoints/ks-user Jobs,
 * glance-api and uwsgi placement-api, each probe calling its API; neutron-server (ML2 with
 * the host test bed's no-op mechanism driver) and nova (api, conductor, scheduler, and
 * nova-compute with the fake driver; the cells set up by db-sync and cell-setup). Then that
 * Keystone, asked from the host at its pod's address, issues a token for the admin the install
 * generated, its catalog lists identity, image, placement, network and compute, an image is
 * uploaded through that Glance and read back, Placement answers with the token (its
 * middleware checked it with Keystone as the placement user the ks-user Job made) and lists
 * the fake hypervisor's resource provider, a network is made through that Neutron, and that
 * Nova lists servers and its one hypervisor.
 * Each chart's install time is printed from the cluster's own timestamps (the benchmark).
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const name = `realcloud-${run}`;
const ns = `realcloud-${run}`;
const selector = `kupenstack.io/test-run=${run}`;
const chartsDir = mkdtempSync(join(tmpdir(), 'ks-real-charts-'));
let controller: ControllerProcess | undefined;

interface Cr { metadata: { generation: number }; status?: OpenStackCloudStatus }
interface ContainerStatus { name: string; ready: boolean; containerID?: string; image: string; state?: { waiting?: { reason?: string }; terminated?: { exitCode: number } } }
interface Pod {
  metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> };
  spec: { nodeName?: string };
  status: { phase: string; podIP?: string; conditions?: { type: string; status: string; lastTransitionTime: string }[]; containerStatuses?: ContainerStatus[]; initContainerStatuses?: ContainerStatus[] };
}
interface Job { metadata: { name: string; creationTimestamp: string; labels?: Record<string, string> }; status: { completionTime?: string } }
/** The charts this test installs, and the components whose pods run (one container each). */
const CHARTS: Record<string, string[]> = { mariadb: ['server'], memcached: ['server'], rabbitmq: ['server'], keystone: ['api'], glance: ['api'], placement: ['api'], neutron: ['server'], nova: ['api', 'compute', 'conductor', 'scheduler'] };
const IMAGES = Object.keys(CHARTS);
/** The charts whose images change from 2022.2 to 2025.1, in the upgrade order (agent/cloud/catalogue.ts UPGRADE_ORDER). */
const UPGRADED = ['keystone', 'placement', 'glance', 'neutron', 'nova'];
const COMPONENTS = Object.entries(CHARTS).flatMap(([chart, components]) => components.map((c) => `${chart}/${c}`)).sort();
const cr = (): Cr => getJson<Cr>(['get', 'openstackcloud', name]);
const ready = (c: Cr): boolean => c.status?.observedGeneration === 1 && c.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True' && x.observedGeneration === 1) === true;
/** Every pod of the chart placed on the real node only (values the test passes, as an operator would for a node pool). */
const place = { labels: Object.fromEntries(['api', 'job', 'server', 'agent'].map((k) => [k, { node_selector_key: realNode.label.key, node_selector_value: realNode.label.value }])), pod: { tolerations: onRealNode.tolerations } };

beforeAll(async () => {
  // The images (seconds once built and pushed: cached by their version key; `npm test` builds them in the background meanwhile, test/testbed/prebuild-images.sh: keep its list the same).
  const images = spawnSync('bash', [join(repo, 'test/testbed/os-images/build.sh'), '--push', ...IMAGES], { encoding: 'utf8', timeout: 2_400_000 });
  if (images.status !== 0) throw new Error(`test/testbed/os-images/build.sh failed (${images.status}):\n${images.stderr.slice(-3000)}`);
  // The 2025.1 services the upgrade goes to, from Debian trixie's packages (the infrastructure keeps its bookworm images).
  const trixie = spawnSync('bash', [join(repo, 'test/testbed/os-images/build.sh'), '--push', ...UPGRADED], { encoding: 'utf8', timeout: 3_000_000, env: { ...process.env, OSI_SUITE: 'trixie' } });
  if (trixie.status !== 0) throw new Error(`OSI_SUITE=trixie test/testbed/os-images/build.sh failed (${trixie.status}):\n${trixie.stderr.slice(-3000)}`);
  // This checkout's charts, unpacked (a chart.path source): the test bed's chart peer may serve another checkout's.
  // The Debian image set: 2022.2 and 2025.1 from Debian's packages (values_overrides/<chart>/debian/).
  buildCharts(chartsDir, charts.helm, 'http://127.0.0.1:8190/charts', { imageSet: 'debian' });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  kubectlOk(['create', 'namespace', ns]);
  kubectlOk(['create', 'rolebinding', 'kupenstack-controller-cloud', '-n', ns, '--clusterrole', 'kupenstack-controller-cloud', '--serviceaccount', 'kupenstack-system:kupenstack-controller']);
  const kubeconfig = serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller');
  process.env.KUPENSTACK_HELM = charts.helm;
  // No --cloud, no clouds.yaml: the controller only drives OpenStackCloud.
  controller = new ControllerProcess(kubeconfig, ['--no-syncs', '--cloud-selector', selector, '--cloud-resync', '1h', '--opt-in-label', `kupenstack.io/project=${run}`]);
  await controller.start();
}, 5_500_000);

afterAll(async () => {
  await controller?.stop();
  kubectl(['delete', 'openstackcloud', name, '--wait=false']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  for (const e of kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${name}`, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['delete', e, '-n', 'default']);
  rmSync(chartsDir, { recursive: true, force: true });
}, 120_000);

/** What a failed wait shows: every pod's phase and readiness, and the log tail of each container that is not ready. */
function diagnose(): string {
  const pods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods']).items;
  return pods
    .map((p) => {
      const statuses = [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])];
      const head = `${p.metadata.name} ${p.status.phase} ${statuses.map((c) => `${c.name}:${c.ready ? 'ready' : (c.state?.waiting?.reason ?? (c.state?.terminated ? `exit ${c.state.terminated.exitCode}` : 'running'))}`).join(' ')}`;
      const logs = statuses.filter((c) => !c.ready && c.state?.terminated?.exitCode !== 0).map((c) => `  --- ${c.name}:\n${kubectl(['-n', ns, 'logs', p.metadata.name, '-c', c.name, '--tail', '15']).stdout.replace(/^/gm, '  ')}`);
      return [head, ...logs].join('\n');
    })
    .join('\n');
}

/**
 * Each chart's install time, from the cluster's own clocks: its first pod or Job created → the
 * last of its Jobs complete and its pods Ready. Charts of one install group start together (the
 * controller applies a group's workloads first; their init containers wait for the Jobs).
 */
function chartTimes(): Record<string, number> {
  const pods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods']).items;
  const jobs = getJson<{ items: Job[] }>(['-n', ns, 'get', 'jobs']).items;
  const out: Record<string, number> = {};
  for (const chart of Object.keys(CHARTS)) {
    const mine = <T extends { metadata: { labels?: Record<string, string> } }>(xs: T[]): T[] => xs.filter((x) => x.metadata.labels?.application === chart);
    const starts = [...mine(pods), ...mine(jobs)].map((x) => Date.parse(x.metadata.creationTimestamp));
    const ends = [
      ...mine(jobs).map((j) => Date.parse(j.status.completionTime ?? '')),
      ...mine(pods).filter((p) => p.status.phase === 'Running').map((p) => Date.parse(p.status.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime ?? '')),
    ];
    out[chart] = (Math.max(...ends) - Math.min(...starts)) / 1000;
  }
  return out;
}

interface Catalog { type: string; endpoints: { interface: string; url: string; region_id: string }[] }

describe('an OpenStackCloud installed as real pods', () => {
  it('a controller without --cloud installs infrastructure, Keystone, Glance, Placement, Neutron and Nova 2022.2 from Debian-built images on the real node to Ready; Keystone issues a token whose catalog lists identity, image, placement, network and compute; an image goes up and comes back through that Glance; Placement lists the fake hypervisor; a network is made through that Neutron; that Nova lists servers and its hypervisor', async () => {
    expect(controller!.log()).toContain('no cloud given (--cloud)');
    const off = { enabled: false };
    const manifest = {
      apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name, labels: { 'kupenstack.io/test-run': run } },
      spec: {
        release: '2022.2', namespace: ns, chart: { path: join(chartsDir, 'src') },
        services: { keystone: { values: place }, glance: { values: place }, placement: { values: place }, neutron: { values: place }, nova: { values: place }, cinder: off, horizon: off },
        infrastructure: { mariadb: { values: place }, rabbitmq: { values: place }, memcached: { values: place } },
      },
    };
    const t0 = Date.now();
    kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(manifest) });
    // No fail-fast on Stalled: a controller of another test sharing this cluster without a --cloud-selector may write it (seen: a Forbidden from its namespace).
    let last = '';
    await until('the real cloud to be Ready', () => {
      const c = cr();
      last = JSON.stringify(c.status?.conditions ?? []);
      return Promise.resolve(ready(c));
    }, 2_100_000, 2_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last conditions: ${last}\npods:\n${diagnose()}`, { cause: err });
    });
    const times = chartTimes();
    console.log(`[real-cloud] infrastructure + keystone + glance + placement + neutron + nova 2022.2 Ready as real pods in ${((Date.now() - t0) / 1000).toFixed(0)} s; per chart (first object → last Job complete / pod Ready): ${Object.entries(times).map(([c, t]) => `${c} ${t.toFixed(0)} s`).join(', ')}`);

    const c = cr();
    expect(c.status?.release).toBe('2022.2');
    expect(Object.fromEntries(Object.entries(c.status?.services ?? {}).map(([chart, s]) => [chart, s.ready]))).toEqual(Object.fromEntries(Object.keys(CHARTS).map((k) => [k, true])));

    // Real pods: on the real node, their containers started by containerd from the Debian-built images.
    const pods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods']).items;
    const running = pods.filter((p) => p.status.phase === 'Running');
    expect(running.map((p) => `${p.metadata.labels?.application ?? '?'}/${p.metadata.labels?.component ?? '?'}`).sort()).toEqual(COMPONENTS);
    expect([...new Set(pods.map((p) => p.spec.nodeName))]).toEqual([realNode.name]);
    const containers = running.flatMap((p) => (p.status.containerStatuses ?? []).map((s) => ({ pod: p.metadata.name, ...s })));
    expect(containers).toHaveLength(COMPONENTS.length);
    const image = new RegExp(`^127\\.0\\.0\\.1:5050/kupenstack-testbed/openstack/(${IMAGES.join('|')}):2022\\.2$`);
    expect(containers.filter((s) => !s.ready || !/^containerd:\/\//.test(s.containerID ?? '') || !image.test(s.image))).toEqual([]);
    // The schemas were really synced by each service's own manage command (their own log lines).
    expect(kubectlOk(['-n', ns, 'logs', 'job/keystone-db-sync', '-c', 'db-sync'])).toMatch(/Running upgrade .* Initial version[\s\S]*keystone schema synced and bootstrapped/);
    expect(kubectlOk(['-n', ns, 'logs', 'job/glance-db-sync', '-c', 'db-sync'])).toMatch(/(Database is synced successfully|Database is up to date)[\s\S]*glance schema synced: \S+/);
    expect(kubectlOk(['-n', ns, 'logs', 'job/placement-db-sync', '-c', 'db-sync'])).toMatch(/placement schema synced/);
    expect(kubectlOk(['-n', ns, 'logs', 'job/glance-ks-user', '-c', 'ks-user'])).toContain('user glance@service has role admin on service@service');
    expect(kubectlOk(['-n', ns, 'logs', 'job/neutron-db-sync', '-c', 'db-sync'])).toMatch(/Running upgrade [\s\S]*neutron schema synced/);
    expect(kubectlOk(['-n', ns, 'logs', 'job/nova-db-sync', '-c', 'db-sync'])).toMatch(/\| +cell0 +\|[\s\S]*\| +cell1 +\|[\s\S]*nova api, cell0 and cell1 schemas synced/);
    // nova-compute (fake driver) registered and cell-setup mapped its host into cell1.
    expect(kubectlOk(['-n', ns, 'logs', 'job/nova-cell-setup', '-c', 'cell-setup'])).toMatch(/\| +cell1 +\| +[0-9a-f-]+ +\| +nova-compute-\w+ +\|[\s\S]*compute hosts mapped to cell1/);

    // Keystone answers at its pod's address (the Service's endpoint) and issues a token to the admin the install generated.
    const address = (service: string): string => {
      const endpoints = getJson<{ subsets?: { addresses?: { ip: string }[] }[] }>(['-n', ns, 'get', 'endpoints', service]);
      const ip = endpoints.subsets?.[0]?.addresses?.[0]?.ip;
      expect(ip, `a ready address of Service ${service}`).toMatch(/^10\.89\.0\.\d+$/);
      return ip!;
    };
    const keystone = `http://${address('keystone-api')}:5000`;
    const version = await fetch(`${keystone}/v3`);
    expect(version.status).toBe(200);
    expect(((await version.json()) as { version: { id: string } }).version.id).toBe('v3.14');
    const secret = getJson<{ data: Record<string, string> }>(['-n', ns, 'get', 'secret', `kupenstack-cloud-${name}-secrets`]);
    const password = (JSON.parse(Buffer.from(secret.data['secrets.json']!, 'base64').toString('utf8')) as { identityAdmin: string }).identityAdmin;
    const scope = { project: { name: 'admin', domain: { id: 'default' } } };
    const res = await fetch(`${keystone}/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password } } }, scope } }) });
    expect(res.status).toBe(201);
    const subject = res.headers.get('x-subject-token');
    expect(subject).toBeTruthy();
    const token = ((await res.json()) as { token: { roles: { name: string }[]; catalog: Catalog[] } }).token;
    expect(token.roles.map((r) => r.name)).toContain('admin');
    const publicUrl = (type: string): { url: string; region_id: string } | undefined => token.catalog.find((e) => e.type === type)?.endpoints.find((e) => e.interface === 'public');
    expect(publicUrl('identity')).toMatchObject({ url: `http://keystone-api.${ns}.svc.cluster.local:5000/v3`, region_id: 'RegionOne' });
    expect(publicUrl('image')).toMatchObject({ url: `http://glance-api.${ns}.svc.cluster.local:9292`, region_id: 'RegionOne' });
    expect(publicUrl('placement')).toMatchObject({ url: `http://placement-api.${ns}.svc.cluster.local:8778`, region_id: 'RegionOne' });
    expect(publicUrl('network')).toMatchObject({ url: `http://neutron-server.${ns}.svc.cluster.local:9696`, region_id: 'RegionOne' });
    expect(publicUrl('compute')).toMatchObject({ url: `http://nova-api.${ns}.svc.cluster.local:8774/v2.1`, region_id: 'RegionOne' });
    // A wrong password is refused: the token above was a real check.
    const wrong = await fetch(`${keystone}/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: `${password}x` } } }, scope } }) });
    expect(wrong.status).toBe(401);
    const auth = { 'x-auth-token': subject! };

    // An image goes up through the in-cluster Glance and comes back byte for byte (its middleware validated the token with Keystone as the glance user).
    const glance = `http://${address('glance-api')}:9292`;
    expect((await fetch(`${glance}/v2/images`)).status).toBe(401);
    const disk = randomBytes(256 * 1024);
    const created = await fetch(`${glance}/v2/images`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: `real-cloud-${run}`, disk_format: 'raw', container_format: 'bare' }) });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { id: string }).id;
    const upload = await fetch(`${glance}/v2/images/${id}/file`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: disk });
    expect(upload.status).toBe(204);
    const shown = (await (await fetch(`${glance}/v2/images/${id}`, { headers: auth })).json()) as { status: string; size: number; os_hash_algo: string; os_hash_value: string };
    expect(shown).toMatchObject({ status: 'active', size: disk.length, os_hash_algo: 'sha512', os_hash_value: createHash('sha512').update(disk).digest('hex') });
    const back = await fetch(`${glance}/v2/images/${id}/file`, { headers: auth });
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer()).equals(disk)).toBe(true);
    expect((await fetch(`${glance}/v2/images/${id}`, { method: 'DELETE', headers: auth })).status).toBe(204);

    // Placement answers with the token and refuses without one.
    const placement = `http://${address('placement-api')}:8778`;
    const versionHeader = { 'openstack-api-version': 'placement 1.6' };
    expect((await fetch(`${placement}/resource_providers`, { headers: versionHeader })).status).toBe(401);
    const providers = await fetch(`${placement}/resource_providers`, { headers: { ...auth, ...versionHeader } });
    expect(providers.status).toBe(200);
    // nova-compute reported its fake hypervisor to Placement as the nova user.
    const rps = ((await providers.json()) as { resource_providers: { name: string }[] }).resource_providers;
    expect(rps.map((r) => r.name)).toEqual([expect.stringMatching(/^nova-compute-\w+$/)]);

    // A network goes up through the in-cluster Neutron (ML2, the no-op mechanism driver) and is gone after its delete.
    const neutron = `http://${address('neutron-server')}:9696`;
    expect((await fetch(`${neutron}/v2.0/networks`)).status).toBe(401);
    const net = await fetch(`${neutron}/v2.0/networks`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ network: { name: `real-cloud-${run}` } }) });
    expect(net.status).toBe(201);
    const network = ((await net.json()) as { network: { id: string; status: string; 'provider:network_type': string } }).network;
    expect(network).toMatchObject({ status: 'ACTIVE', 'provider:network_type': 'vxlan' });
    const listed = (await (await fetch(`${neutron}/v2.0/networks?name=real-cloud-${run}`, { headers: auth })).json()) as { networks: { id: string }[] };
    expect(listed.networks.map((n) => n.id)).toEqual([network.id]);
    expect((await fetch(`${neutron}/v2.0/networks/${network.id}`, { method: 'DELETE', headers: auth })).status).toBe(204);
    expect((await fetch(`${neutron}/v2.0/networks/${network.id}`, { headers: auth })).status).toBe(404);

    // The in-cluster Nova lists servers (none) and its one hypervisor: the fake driver's nova-compute, up, in cell1.
    const nova = `http://${address('nova-api')}:8774/v2.1`;
    expect((await fetch(`${nova}/servers`)).status).toBe(401);
    const servers = await fetch(`${nova}/servers`, { headers: auth });
    expect(servers.status).toBe(200);
    expect(((await servers.json()) as { servers: unknown[] }).servers).toEqual([]);
    const hypervisors = (await (await fetch(`${nova}/os-hypervisors/detail`, { headers: { ...auth, 'openstack-api-version': 'compute 2.53' } })).json()) as { hypervisors: { hypervisor_hostname: string; hypervisor_type: string; state: string; status: string }[] };
    expect(hypervisors.hypervisors).toEqual([expect.objectContaining({ hypervisor_type: 'fake', state: 'up', status: 'enabled' })]);
  }, 2_400_000);
});

