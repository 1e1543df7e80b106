import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { OpenStackCloudStatus } from '../../../agent/model/kinds.generated.ts';
import { buildCharts } from '../../charts/build.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { onRealNode, realNode } from '../../testbed/node/peer.ts';
import { pushDiskAs, qcow2Disk } from '../kinds/image-oci-fixtures.ts';
import { ClusterHosts } from './cluster-hosts.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';
import { adminPassword, apis, call, idleInTransaction, idleTransaction, makeKept, parseCounts, restoreIntoScratch, rowCounts, serverActive, token, type Kept } from './real-cloud-data.ts';

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
 *
 * Then the resource loop manages that cloud: the install names, in status, each service's
 * public endpoint as that Keystone's catalog lists it and the Secret holding a clouds.yaml of
 * the admin it generated; a second controller, started with `--cloud <name> --clouds-secret
 * <that Secret>` before the Secret existed, converges repo-template's tenants in that cloud
 * (a VM ACTIVE on the fake driver, its image imported from the test bed's OCI registry), and
 * the openstack CLI, logging in to the in-cluster Keystone with those credentials, lists them.
 * The test bed has no cluster DNS: the controllers and the CLI run with a hosts file of the
 * cloud's Services as their /etc/hosts (cluster-hosts.ts), as a pod would resolve them.
 *
 * Then the same cloud is upgraded to 2025.1 with a real backup (the second describe below), and
 * the resource loop, running throughout, finds its tenants Ready in the upgraded cloud.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const name = `realcloud-${run}`;
const ns = `realcloud-${run}`;
const selector = `kupenstack.io/test-run=${run}`;
const chartsDir = mkdtempSync(join(tmpdir(), 'ks-real-charts-'));
let controller: ControllerProcess | undefined;
/** The resource loop, given the Secret the install writes (it does not exist when this starts). */
let resources: ControllerProcess | undefined;
let hosts: ClusterHosts | undefined;
const cloudsSecret = `kupenstack-cloud-${name}-clouds-yaml`;
/** repo-template's tenants, each in a namespace of this run (namespace = project). */
const TENANTS = ['team-a', 'team-b'];
const tenantNs = (t: string): string => `${ns}-${t}`;
const diskRepo = `kupenstack-test/realcloud-${run}/cirros`;

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
/** nova-compute's state (its node identity) in a directory of the real node, as OSH keeps /var/lib/nova on the host: an upgrade replaces the pod, not the compute host. */
const hostState = join(realNode.dir, 'host-state');
const novaValues = { ...place, run: { hostState: { compute: hostState } } };

/**
 * What an earlier run of this file left when it was killed before its afterAll (a stopped
 * session, a CI timeout): its OpenStackCloud, namespaces and create journal. Left there, the real
 * node's kubelet starts that cloud's pods again with the test bed and they run beside this one.
 * Only names of this file's own shape (`realcloud-<6 hex>`) other than this run's are removed.
 */
function sweepEarlierRuns(): void {
  const mine = /^realcloud-[0-9a-f]{6}(-team-[ab])?$/;
  const names = (args: string[]): string[] => kubectl([...args, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.slice(n.indexOf('/') + 1));
  for (const c of names(['get', 'openstackcloud']).filter((n) => mine.test(n) && n !== name)) {
    kubectl(['patch', 'openstackcloud', c, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'openstackcloud', c, '--wait=false']);
  }
  for (const n of names(['get', 'namespace']).filter((x) => mine.test(x) && !x.startsWith(ns))) {
    for (const o of kubectl(['get', TENANT_KINDS, '-n', n, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', o, '-n', n, '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'namespace', n, '--wait=false']);
    process.stdout.write(`[real-cloud] removed namespace ${n}, left by an earlier run that did not finish\n`);
  }
  for (const c of names(['get', 'configmap', '-n', 'kupenstack-system']).filter((x) => /^realcloud-[0-9a-f]{6}-creates$/.test(x) && x !== `${name}-creates`)) kubectl(['delete', 'configmap', c, '-n', 'kupenstack-system']);
}

beforeAll(async () => {
  sweepEarlierRuns();
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
  for (const t of TENANTS) {
    kubectlOk(['create', 'namespace', tenantNs(t)]);
    kubectlOk(['label', 'namespace', tenantNs(t), `kupenstack.io/project=${run}`]);
  }
  const kubeconfig = serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller');
  process.env.KUPENSTACK_HELM = charts.helm;
  hosts = new ClusterHosts(ns);
  hosts.start();
  // No --cloud, no clouds.yaml: the controller only drives OpenStackCloud (and reads the catalog as the admin the install generated).
  controller = new ControllerProcess(kubeconfig, ['--no-syncs', '--cloud-selector', selector, '--cloud-resync', '1h', '--opt-in-label', `kupenstack.io/project=${run}`], undefined, hosts.wrap);
  await controller.start();
  // The resource loop of that cloud, before the cloud exists: it reads the clouds.yaml Secret the install will write.
  resources = new ControllerProcess(
    kubeconfig,
    ['--cloud', name, '--clouds-secret', `${ns}/${cloudsSecret}`, '--no-syncs', '--no-cloud-lifecycle', '--owner', `rc${run}`, '--project-prefix', 'ks-', '--resync', '30s', '--opt-in-label', `kupenstack.io/project=${run}`, '--leader-election-id', `realcloud-${run}`],
    undefined,
    hosts.wrap,
  );
  await resources.start();
}, 5_500_000);

afterAll(async () => {
  await resources?.stop();
  await controller?.stop();
  hosts?.stop();
  // The cloud goes with its namespace: the tenants' objects lose their finalizers (nothing is left to delete them from).
  for (const t of TENANTS) {
    for (const o of kubectl(['get', TENANT_KINDS, '-n', tenantNs(t), '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', o, '-n', tenantNs(t), '--type', 'merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'namespace', tenantNs(t), '--wait=false']);
  }
  kubectl(['delete', 'configmap', `realcloud-${run}-creates`, '-n', 'kupenstack-system']);
  kubectl(['delete', 'openstackcloud', name, '--wait=false']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  // The compute's node directory of this run (the kubelet made it; the pod is gone with the namespace).
  rmSync(join(hostState, ns), { recursive: true, force: true });
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

/**
 * The log of a Job's pod that succeeded: the Jobs' pods never restart in place (restartPolicy Never), so a Job
 * that needed a second attempt (a Keystone still starting) keeps the failed pod too, which `kubectl logs job/…` may pick.
 */
function jobLog(job: string, container: string): string {
  const pods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods', '-l', `job-name=${job}`]).items.filter((p) => p.status.phase === 'Succeeded');
  if (pods.length === 0) throw new Error(`Job ${ns}/${job} has no succeeded pod`);
  return kubectlOk(['-n', ns, 'logs', pods[pods.length - 1]!.metadata.name, '-c', container]);
}

interface Catalog { type: string; endpoints: { interface: string; url: string; region_id: string }[] }

/** The kinds repo-template's tenants use here, as kubectl names them. */
const TENANT_KINDS = 'networks.kupenstack.io,subnets.kupenstack.io,routers.kupenstack.io,securitygroups.kupenstack.io,flavors.kupenstack.io,keypairs.kupenstack.io,images.kupenstack.io,ports.kupenstack.io,floatingips.kupenstack.io,virtualmachines.kupenstack.io,projectquotas.kupenstack.io';
interface TenantObject { kind: string; metadata: { name: string; namespace: string }; status?: { id?: string; serverStatus?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] } }
const objects = (): TenantObject[] => TENANTS.flatMap((t) => getJson<{ items: TenantObject[] }>(['get', TENANT_KINDS, '-n', tenantNs(t)]).items);
const notReady = (): TenantObject[] => objects().filter((o) => !o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

/**
 * repo-template's tenants as this run applies them: each namespace renamed to this run's, the
 * images from this run's repository of the test bed's registry. Cinder is not installed: the
 * volume-booted VM db-1, its Volume and the block-storage quota are left out.
 */
function tenantManifests(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const t of TENANTS) {
    const dir = join(repo, 'repo-template/tenants', t);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
      for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
        const o = doc.toJS() as { kind: string; metadata: { name: string; namespace: string }; spec: Record<string, unknown> };
        if ((o.kind === 'VirtualMachine' && o.spec.bootVolume) || o.kind === 'Volume') continue;
        if (o.kind === 'ProjectQuota') delete o.spec.blockStorage;
        if (o.kind === 'Image') (o.spec.source as { oci: { repository: string } }).oci.repository = `127.0.0.1:5050/${diskRepo}`;
        o.metadata.namespace = tenantNs(t);
        out.push(o);
      }
    }
  }
  return out;
}

/** The openstack CLI of the host, logged in to the in-cluster Keystone as the generated admin (the password in its environment, never on a command line), resolving the cloud's Services through the hosts file. */
function openstackCli(authUrl: string, password: string, args: string[]): unknown {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OS_')));
  const login = ['--os-auth-url', authUrl, '--os-identity-api-version', '3', '--os-username', 'admin', '--os-user-domain-id', 'default', '--os-project-name', 'admin', '--os-project-domain-id', 'default', '--os-region-name', 'RegionOne', '--os-interface', 'internal'];
  const [file, ...rest] = [...hosts!.wrap, 'openstack', ...login, ...args, '-f', 'json'];
  const r = spawnSync(file, rest, { encoding: 'utf8', env: { ...env, OS_PASSWORD: password }, timeout: 180_000 });
  if (r.status !== 0) throw new Error(`openstack ${args.join(' ')} failed (${r.status}): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout);
}

describe('an OpenStackCloud installed as real pods', () => {
  it('a controller without --cloud installs infrastructure, Keystone, Glance, Placement, Neutron and Nova 2022.2 from Debian-built images on the real node to Ready; Keystone issues a token whose catalog lists identity, image, placement, network and compute; an image goes up and comes back through that Glance; Placement lists the fake hypervisor; a network is made through that Neutron; that Nova lists servers and its hypervisor', async () => {
    expect(controller!.log()).toContain('no cloud given (--cloud)');
    const off = { enabled: false };
    const manifest = {
      apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name, labels: { 'kupenstack.io/test-run': run } },
      spec: {
        release: '2022.2', namespace: ns, chart: { path: join(chartsDir, 'src') },
        services: { keystone: { values: place }, glance: { values: place }, placement: { values: place }, neutron: { values: place }, nova: { values: novaValues }, cinder: off, horizon: off },
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
    expect(jobLog('keystone-db-sync', 'db-sync')).toMatch(/Running upgrade .* Initial version[\s\S]*keystone schema synced and bootstrapped/);
    expect(jobLog('glance-db-sync', 'db-sync')).toMatch(/(Database is synced successfully|Database is up to date)[\s\S]*glance schema synced: \S+/);
    expect(jobLog('placement-db-sync', 'db-sync')).toMatch(/placement schema synced/);
    expect(jobLog('glance-ks-user', 'ks-user')).toContain('user glance@service has role admin on service@service');
    expect(jobLog('neutron-db-sync', 'db-sync')).toMatch(/Running upgrade [\s\S]*neutron schema synced/);
    expect(jobLog('nova-db-sync', 'db-sync')).toMatch(/\| +cell0 +\|[\s\S]*\| +cell1 +\|[\s\S]*nova api, cell0 and cell1 schemas synced/);
    // nova-compute (fake driver) registered and cell-setup mapped its host into cell1.
    expect(jobLog('nova-cell-setup', 'cell-setup')).toMatch(new RegExp(`\\| +cell1 +\\| +[0-9a-f-]+ +\\| +${realNode.name} +\\|[\\s\\S]*compute hosts mapped to cell1`));

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
    // Named after its node, not its pod (the compute's host survives the pod: nova's compute.sh).
    expect(rps.map((r) => r.name)).toEqual([realNode.name]);

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

  it("the install names its admin's clouds.yaml Secret and each service's public endpoint from that Keystone's catalog in status; a controller started with --clouds-secret before that Secret existed converges repo-template's tenants in that cloud (VMs ACTIVE on the fake driver, the image imported from the OCI registry); the openstack CLI, logged in to the in-cluster Keystone with the generated credentials, lists them", async () => {
    // Status: each service's public endpoint as that Keystone's catalog lists it (read by a controller without --cloud, as the install's admin), and the Secret.
    const status = cr().status!;
    const url = (service: string, port: number, path = ''): string => `http://${service}.${ns}.svc.cluster.local:${port}${path}`;
    expect(Object.fromEntries(Object.entries(status.services ?? {}).map(([chart, s]) => [chart, s.endpoint]))).toEqual({
      mariadb: undefined, memcached: undefined, rabbitmq: undefined,
      keystone: { serviceType: 'identity', state: 'Listed', url: url('keystone-api', 5000, '/v3') },
      glance: { serviceType: 'image', state: 'Listed', url: url('glance-api', 9292) },
      placement: { serviceType: 'placement', state: 'Listed', url: url('placement-api', 8778) },
      neutron: { serviceType: 'network', state: 'Listed', url: url('neutron-server', 9696) },
      nova: { serviceType: 'compute', state: 'Listed', url: url('nova-api', 8774, '/v2.1') },
    });
    expect(status.cloudsSecret).toEqual({ namespace: ns, name: cloudsSecret, key: 'clouds.yaml', cloud: name, authUrl: url('keystone-api', 5000, '/v3') });
    // The Secret holds the admin the install generated; the password is nowhere else: not in the CR, its Events or either controller's log.
    const generated = getJson<{ data: Record<string, string> }>(['-n', ns, 'get', 'secret', `kupenstack-cloud-${name}-secrets`]);
    const password = (JSON.parse(Buffer.from(generated.data['secrets.json']!, 'base64').toString('utf8')) as { identityAdmin: string }).identityAdmin;
    const secret = getJson<{ data: Record<string, string>; metadata: { labels: Record<string, string> } }>(['-n', ns, 'get', 'secret', cloudsSecret]);
    expect(secret.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'kupenstack', 'kupenstack.io/cloud': name });
    const cloudsYaml = parse(Buffer.from(secret.data['clouds.yaml']!, 'base64').toString('utf8')) as { clouds: Record<string, { auth: Record<string, string>; region_name: string }> };
    expect(Object.keys(cloudsYaml.clouds)).toEqual([name]);
    expect(cloudsYaml.clouds[name]).toMatchObject({ auth: { auth_url: url('keystone-api', 5000, '/v3'), username: 'admin', password, project_name: 'admin' }, region_name: 'RegionOne' });
    const events = kubectlOk(['get', 'events', '-A', '--field-selector', `involvedObject.name=${name}`, '-o', 'json']);
    for (const [what, text] of [['the CR', kubectlOk(['get', 'openstackcloud', name, '-o', 'json'])], ['its Events', events], ['the cloud controller log', controller!.log()], ['the resource controller log', resources!.log()]] as const) {
      expect(text.includes(password), `${what} holds the admin password`).toBe(false);
    }

    // The operator's one step in a new cloud: the external network the tenants' routers and floating IPs name ("public").
    const authUrl = status.cloudsSecret!.authUrl!;
    const os = (args: string[]): unknown => openstackCli(authUrl, password, args);
    os(['network', 'create', '--external', '--share', 'public']);
    os(['subnet', 'create', '--network', 'public', '--subnet-range', '198.51.100.0/24', '--no-dhcp', 'public-subnet']);

    // The VM image as an OCI artifact in the test bed's registry, under the tags the template names: team-a's "0.6", team-b's semver range >=0.6.0 <0.7.0.
    const disk = qcow2Disk();
    const digest = await pushDiskAs('kupenstack-artifact', diskRepo, '0.6', disk);
    expect(await pushDiskAs('kupenstack-artifact', diskRepo, '0.6.2', disk)).toBe(digest);
    const t0 = Date.now();
    kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: tenantManifests() }) });
    await until("repo-template's tenants Ready in the installed cloud", () => Promise.resolve(notReady().length === 0), 1_200_000, 5_000).catch((err: unknown) => {
      const left = notReady().map((o) => `${o.metadata.namespace}/${o.kind}/${o.metadata.name}: ${JSON.stringify(o.status?.conditions ?? [])}`);
      throw new Error(`${(err as Error).message}\n${left.join('\n')}\nresource controller log tail:\n${resources!.log().slice(-4000)}`, { cause: err });
    });
    const all = objects();
    console.log(`[real-cloud] repo-template's tenants (${all.length} objects, ${all.filter((o) => o.kind === 'VirtualMachine').length} VMs) Ready in the installed cloud in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const ids = (kind: string): string[] => all.filter((o) => o.kind === kind).map((o) => o.status!.id!).sort();
    const vms = all.filter((o) => o.kind === 'VirtualMachine');
    expect(vms.map((v) => `${v.metadata.namespace}/${v.metadata.name}:${v.status?.serverStatus ?? '?'}`).sort()).toEqual([`${tenantNs('team-a')}/web-1:ACTIVE`, `${tenantNs('team-b')}/web:ACTIVE`]);

    // What that cloud's own CLI lists, by the ids the objects' status names.
    const listed = (args: string[], key = 'ID'): string[] => (os(args) as Record<string, string>[]).map((r) => r[key]!);
    const servers = os(['server', 'list', '--all-projects', '--long']) as { ID: string; Status: string; 'Power State': number }[];
    // Power state 1: Nova's RUNNING.
    expect(servers.filter((v) => ids('VirtualMachine').includes(v.ID)).map((v) => `${v.Status}/${v['Power State']}`)).toEqual(['ACTIVE/1', 'ACTIVE/1']);
    expect(listed(['network', 'list'])).toEqual(expect.arrayContaining(ids('Network')));
    expect(listed(['subnet', 'list'])).toEqual(expect.arrayContaining(ids('Subnet')));
    expect(listed(['router', 'list'])).toEqual(expect.arrayContaining(ids('Router')));
    expect(listed(['security', 'group', 'list', '--all-projects'])).toEqual(expect.arrayContaining(ids('SecurityGroup')));
    expect(listed(['port', 'list'])).toEqual(expect.arrayContaining(ids('Port')));
    expect(listed(['floating', 'ip', 'list'])).toEqual(expect.arrayContaining(ids('FloatingIP')));
    expect(listed(['flavor', 'list', '--all'])).toEqual(expect.arrayContaining(ids('Flavor')));
    expect(listed(['keypair', 'list'], 'Name')).toEqual(expect.arrayContaining(ids('KeyPair')));
    expect(listed(['image', 'list'])).toEqual(expect.arrayContaining(ids('Image')));
    // Each Glance image came from the registry: the pushed artifact's digest is its oci_manifest_digest property.
    const images = [...new Set(ids('Image'))];
    expect(images.length).toBeGreaterThan(0);
    for (const id of images) expect((os(['image', 'show', id]) as { properties: Record<string, string> }).properties).toMatchObject({ oci_manifest_digest: digest, oci_repository: `127.0.0.1:5050/${diskRepo}` });
  }, 2_400_000);
});


/*
 * The same cloud upgraded 2022.2 → 2025.1 (Debian bookworm's packages → trixie's, a fast-forward
 * path of agent/cloud/releases.ts): a real mysqldump backup Job first, onto a claim of the real
 * node's local volumes; then the charts one at a time (keystone, placement, glance, neutron,
 * nova), each with its real schema Jobs (expand/migrate/contract where the service has them)
 * and gated on its pods' real readiness. The first revision also carries a wrong database root
 * password in glance's values: glance's db-init really fails and the upgrade stops there, with
 * the Job, the pod's exit code and its log in status; the next revision fixes it and the upgrade
 * resumes at glance without a second backup; the controller is killed (SIGKILL) while neutron's
 * expand Job exists and the restarted one finishes. The project, network, image and VM made
 * before are there and usable after; the backup restores into a scratch server with the row
 * counts of Keystone's and Glance's tables as they were.
 */
describe('the real cloud upgraded to 2025.1 with a real backup', () => {
  const backupName = 'mariadb-backup-before-2025-1';
  let kept: Kept | undefined;
  let counts: Record<string, number> = {};
  const at = (gen: number) => (c: Cr): boolean => c.status?.observedGeneration === gen && c.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True' && x.observedGeneration === gen) === true;
  const jobs = (): Job[] => getJson<{ items: Job[] }>(['-n', ns, 'get', 'jobs']).items;
  const created = (j: { metadata: { creationTimestamp: string } }): number => Date.parse(j.metadata.creationTimestamp);

  it('2022.2 → 2025.1: the backup Job completes before the first db-sync Job; a wrong database password stops the upgrade at glance with the exit code and log in status; fixed, it resumes there without a second backup, survives a kill -9 of the controller, and every service runs 2025.1 with the data made before', async () => {
    expect(cr().status?.release, 'the install test above left the cloud at 2022.2').toBe('2022.2');
    const before = apis(ns);
    const password = adminPassword(ns, name);
    kept = await makeKept(before, password, run);
    counts = rowCounts(ns, ['keystone', 'glance']);
    expect(counts['keystone.project']).toBeGreaterThanOrEqual(3);
    expect(counts['glance.images']).toBeGreaterThanOrEqual(1);

    // A client idle inside a transaction that read keystone's service_provider table (a running API's pooled connection
    // can be: seen from 2022.2 keystone-api, idle 8 min), holding the metadata lock keystone's expand needs (ALTER TABLE
    // service_provider). Without the chart's --idle-transaction-timeout the expand waits a day and the API queues behind it.
    const idle = idleTransaction(ns, 'keystone.service_provider');
    await until('the idle transaction to be open', () => Promise.resolve(idleInTransaction(ns, 2) >= 1), 60_000, 1_000);

    // Revision 2: release 2025.1, and glance's values carry a wrong database root password (its db-init logs in as root).
    const t0 = Date.now();
    const wrong = { endpoints: { oslo_db: { auth: { admin: { password: `wrong-${run}` } } } } };
    kubectlOk(['patch', 'openstackcloud', name, '--type', 'merge', '-p', JSON.stringify({ spec: { release: '2025.1', services: { glance: { values: wrong } } } })]);
    let last = '';
    try {
      await until('the upgrade to stop at glance', () => {
        const c = cr();
        last = JSON.stringify({ upgrade: c.status?.upgrade, conditions: c.status?.conditions });
        return Promise.resolve(c.status?.upgrade?.phase === 'Failed');
      }, 2_700_000, 3_000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; last: ${last}\npods:\n${diagnose()}`, { cause: err });
      });
      // The server closed the idle transaction (the expand went through it).
      expect(idleInTransaction(ns, 65)).toBe(0);
    } finally {
      // Its kubectl exec would outlive a failed wait: ended here either way.
      idle.kill();
    }
    const stopped = cr().status!;
    // A stop elsewhere than glance says where and why (its conditions, the pods that failed and their logs).
    expect(stopped.upgrade, stopped.upgrade?.service === 'glance' ? undefined : `${JSON.stringify(stopped.conditions)}\npods:\n${diagnose()}`).toMatchObject({ from: '2022.2', to: '2025.1', phase: 'Failed', service: 'glance', step: 'glance/Job/glance-db-init', backup: `Job ${ns}/${backupName}` });
    // The pod's real exit code and the log of the real mysql client, as the API server has them.
    const failedPods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods', '-l', 'job-name=glance-db-init']).items;
    const exitCodes = failedPods.map((p) => p.status.containerStatuses?.[0]?.state?.terminated?.exitCode);
    expect(exitCodes.length).toBeGreaterThanOrEqual(1);
    expect(new Set(exitCodes)).toEqual(new Set([1]));
    const stalled = stopped.conditions?.find((x) => x.type === 'Stalled');
    expect(stalled).toMatchObject({ status: 'True', reason: 'UpgradeFailed' });
    expect(stalled?.message).toMatch(/^Job\/glance-db-init: BackoffLimitExceeded \(exit code 1\); log: .*Access denied for user 'root'/);
    expect(stopped.services?.glance).toMatchObject({ ready: false, release: '2022.2' });
    expect(stopped.services?.glance?.message).toContain('(exit code 1)');
    expect(stopped.services?.keystone).toMatchObject({ ready: true, release: '2025.1' });
    expect(stopped.services?.placement).toMatchObject({ ready: true, release: '2025.1' });
    // Neither glance's schema Jobs nor a later chart's were started.
    expect(jobs().map((j) => j.metadata.name).filter((n) => /^(glance-db-sync-|neutron-db-sync-|nova-db-sync-contract)/.test(n))).toEqual([]);
    const backup = getJson<Job & { metadata: { uid: string } }>(['-n', ns, 'get', 'job', backupName]);

    // Revision 3: the password fixed. The upgrade resumes at glance; killed (SIGKILL) once neutron's expand Job exists, the restarted controller finishes it.
    kubectlOk(['patch', 'openstackcloud', name, '--type', 'merge', '-p', JSON.stringify({ spec: { services: { glance: { values: { endpoints: null } } } } })]);
    await until("neutron's expand Job", () => Promise.resolve(jobs().some((j) => j.metadata.name === 'neutron-db-sync-expand')), 2_700_000, 1_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last: ${JSON.stringify(cr().status?.upgrade)}\npods:\n${diagnose()}`, { cause: err });
    });
    const expand = getJson<Job & { metadata: { uid: string } }>(['-n', ns, 'get', 'job', 'neutron-db-sync-expand']);
    controller!.kill9();
    console.log(`[real-cloud] controller killed (SIGKILL) with neutron-db-sync-expand ${expand.status.completionTime ? 'complete' : 'running'}`);
    await controller!.start();
    await until('the cloud Ready at 2025.1', () => {
      const c = cr();
      last = JSON.stringify({ upgrade: c.status?.upgrade, conditions: c.status?.conditions });
      return Promise.resolve(at(3)(c));
    }, 3_000_000, 3_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last: ${last}\npods:\n${diagnose()}`, { cause: err });
    });
    const seconds = ((Date.now() - t0) / 1000).toFixed(0);
    const done = cr().status!;
    expect(done.release).toBe('2025.1');
    expect(done.upgrade).toMatchObject({ from: '2022.2', to: '2025.1', phase: 'Succeeded', backup: `Job ${ns}/${backupName}` });
    expect(Object.fromEntries(Object.entries(done.services ?? {}).map(([chart, st]) => [chart, [st.ready, st.release]]))).toEqual(Object.fromEntries(Object.keys(CHARTS).map((k) => [k, [true, '2025.1']])));

    // One backup, taken before the first schema Job of the upgrade (the API server's clocks).
    const all = jobs();
    const backups = all.filter((j) => j.metadata.labels?.application === 'mariadb' && j.metadata.labels.component === 'backup');
    expect(backups.map((j) => (j as Job & { metadata: { uid: string } }).metadata.uid)).toEqual([backup.metadata.uid]);
    const backupDone = Date.parse(backup.status.completionTime ?? '');
    const dbJobs = all.filter((j) => /-db-(sync|init)/.test(j.metadata.name));
    expect(dbJobs.length).toBeGreaterThanOrEqual(UPGRADED.length * 2);
    expect(Math.min(...dbJobs.map(created))).toBeGreaterThanOrEqual(backupDone);
    // The killed controller's Job was resumed, not made again.
    expect(getJson<{ metadata: { uid: string } }>(['-n', ns, 'get', 'job', 'neutron-db-sync-expand']).metadata.uid).toBe(expand.metadata.uid);
    // The charts in order: each chart's first schema Job after the one before's.
    const firstDb = UPGRADED.map((chart) => Math.min(...dbJobs.filter((j) => j.metadata.labels?.application === chart).map(created)));
    expect(new Set(firstDb.filter((t) => Number.isFinite(t))).size).toBe(UPGRADED.length);
    expect([...UPGRADED].sort((a, b) => firstDb[UPGRADED.indexOf(a)]! - firstDb[UPGRADED.indexOf(b)]!), `first db Job per chart: ${UPGRADED.map((c, i) => `${c} ${firstDb[i]}`).join(', ')}`).toEqual(UPGRADED);
    // Each service's schema moved by its own manage command.
    expect(jobLog('keystone-db-sync-contract', 'db-sync-contract')).toContain('keystone schema contracted: up to date (keystone 27.0.0)');
    expect(jobLog('glance-db-sync-contract', 'db-sync-contract')).toMatch(/glance schema: contract done/);
    expect(jobLog('placement-db-sync', 'db-sync')).toContain('placement schema synced');
    expect(jobLog('neutron-db-sync-contract', 'db-sync-contract')).toMatch(/neutron schema: contract done/);
    expect(jobLog('nova-db-sync-contract', 'db-sync-contract')).toContain('nova online data migrations complete');

    // Every pod runs the 2025.1 images (the infrastructure keeps bookworm's).
    const running = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods']).items.filter((p) => p.status.phase === 'Running');
    const images = running.flatMap((p) => (p.status.containerStatuses ?? []).map((c) => `${p.metadata.labels?.application}:${c.image.replace(/^.*\/openstack\//, '')}:${c.ready}`)).sort();
    expect(images).toEqual(COMPONENTS.map((c) => c.split('/')[0]!).map((chart) => `${chart}:${chart}:${UPGRADED.includes(chart) ? '2025.1' : '2022.2'}:true`).sort());

    // Each service answers as 2025.1: keystone 27, Glance's API v2.17, Nova's microversions up to 2.100.
    const after = apis(ns);
    const keystonePod = running.find((p) => p.metadata.labels?.application === 'keystone')!.metadata.name;
    expect(kubectlOk(['-n', ns, 'exec', keystonePod, '-c', 'api', '--', 'keystone-manage', '--version']).trim()).toBe('27.0.0');
    expect(await (await fetch(`${after.keystone}/v3`)).json()).toMatchObject({ version: { id: 'v3.14', status: 'stable' } });
    const glanceVersions = (await (await fetch(`${after.glance}/versions`)).json()) as { versions: { id: string; status: string }[] };
    expect(glanceVersions.versions.find((v) => v.status === 'CURRENT')?.id).toBe('v2.17');
    const novaVersions = (await (await fetch(after.nova.replace(/\/v2\.1$/, '/'))).json()) as { versions: { id: string; version: string }[] };
    expect(novaVersions.versions.find((v) => v.id === 'v2.1')?.version).toBe('2.100');

    // The data made before is there and usable: a new port on the old network, a new VM from the old image.
    const tok = await token(after.keystone, password, `upgrade-${run}`);
    expect((await call<{ project: { name: string } }>('GET', `${after.keystone}/v3/projects/${kept.project}`, tok)).project.name).toBe(`upgrade-${run}`);
    expect((await call<{ image: { status: string } } & { status: string }>('GET', `${after.glance}/v2/images/${kept.image}`, tok)).status).toBe('active');
    expect((await call<{ server: { status: string } }>('GET', `${after.nova}/servers/${kept.server}`, tok)).server.status).toBe('ACTIVE');
    const port = (await call<{ port: { id: string; network_id: string; fixed_ips: { ip_address: string }[] } }>('POST', `${after.neutron}/v2.0/ports`, tok, { port: { network_id: kept.network, name: `after-${run}` } })).port;
    expect(port.network_id).toBe(kept.network);
    expect(port.fixed_ips[0]?.ip_address).toMatch(/^10\.77\.0\.\d+$/);
    const server = (await call<{ server: { id: string } }>('POST', `${after.nova}/servers`, tok, { server: { name: `after-${run}`, imageRef: kept.image, flavorRef: kept.flavor, networks: [{ port: port.id }] } })).server.id;
    await serverActive(after.nova, tok, server).catch((err: unknown) => {
      // Why Nova could not build it, in its services' own words.
      const why = ['deploy/nova-scheduler', 'deploy/nova-conductor', 'ds/nova-compute'].map((w) => `--- ${w}:\n${kubectl(['-n', ns, 'logs', w, '--tail', '400']).stdout.split('\n').filter((l) => / (WARNING|ERROR) /.test(l)).slice(-12).join('\n')}`);
      throw new Error(`${(err as Error).message}\n${why.join('\n')}`, { cause: err });
    });
    // One compute host before and after: the 2025.1 nova-compute took over the node's compute service (its queue,
    // its node identity), so the old VM and the new one are on the same, live host.
    const adminTok = await token(after.keystone, password);
    const computes = (await call<{ services: { host: string; state: string; status: string }[] }>('GET', `${after.nova}/os-services?binary=nova-compute`, adminTok)).services;
    expect(computes.map((c) => `${c.host}:${c.state}:${c.status}`)).toEqual([`${realNode.name}:up:enabled`]);
    for (const id of [kept.server, server]) {
      expect((await call<{ server: Record<string, unknown> }>('GET', `${after.nova}/servers/${id}`, adminTok)).server['OS-EXT-SRV-ATTR:host'], id).toBe(realNode.name);
    }

    // The resource loop kept running through the upgrade (its Keystone and APIs restarting under it): the tenants it
    // converged before are Ready in the upgraded cloud, their VMs ACTIVE in 2025.1's Nova.
    await until("repo-template's tenants Ready in the upgraded cloud", () => Promise.resolve(notReady().length === 0), 900_000, 5_000).catch((err: unknown) => {
      const left = notReady().map((o) => `${o.metadata.namespace}/${o.kind}/${o.metadata.name}: ${JSON.stringify(o.status?.conditions ?? [])}`);
      throw new Error(`${(err as Error).message}\n${left.join('\n')}\nresource controller log tail:\n${resources!.log().slice(-4000)}`, { cause: err });
    });
    const tenantVms = objects().filter((o) => o.kind === 'VirtualMachine');
    expect(tenantVms.length).toBe(2);
    for (const vm of tenantVms) {
      expect((await call<{ server: { status: string } }>('GET', `${after.nova}/servers/${vm.status!.id!}`, adminTok)).server.status, `${vm.metadata.namespace}/${vm.metadata.name}`).toBe('ACTIVE');
    }

    // The benchmark: the whole upgrade (with the stop at glance, the fix, and the controller's restart), and each chart from its first object of the upgrade to its last Job complete / pod Ready.
    const since = (x: { metadata: { creationTimestamp: string } }): boolean => created(x) >= t0 - 1_000;
    const pods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods']).items.filter(since);
    const per = UPGRADED.map((chart) => {
      const mine = <T extends { metadata: { labels?: Record<string, string> } }>(xs: T[]): T[] => xs.filter((x) => x.metadata.labels?.application === chart);
      const starts = [...mine(pods), ...mine(all.filter(since))].map(created);
      const ends = [...mine(all.filter(since)).map((j) => Date.parse(j.status.completionTime ?? '')), ...mine(pods).filter((p) => p.status.phase === 'Running').map((p) => Date.parse(p.status.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime ?? ''))].filter((x) => !Number.isNaN(x));
      return `${chart} ${((Math.max(...ends) - Math.min(...starts)) / 1000).toFixed(0)} s`;
    });
    console.log(`[real-cloud] upgrade 2022.2 → 2025.1 Ready in ${seconds} s (incl. the stop at glance and the fix); backup ${((backupDone - created(backup)) / 1000).toFixed(0)} s; per chart: ${per.join(', ')}`);
  }, 7_000_000);

  it("the backup restores into a scratch database with the row counts of Keystone's and Glance's tables as they were before the upgrade", async () => {
    expect(Object.keys(counts).length, 'the upgrade test above counted the rows').toBeGreaterThan(20);
    const log = await restoreIntoScratch(ns, `${backupName}.sql.gz`, onRealNode, '127.0.0.1:5050/kupenstack-testbed/openstack/mariadb:2022.2');
    expect(log).toContain(`restored /var/backup/${backupName}.sql.gz into a scratch server`);
    expect(parseCounts(log, ['keystone', 'glance'])).toEqual(counts);
  }, 1_200_000);
});
