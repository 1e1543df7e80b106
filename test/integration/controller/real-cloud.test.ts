import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
 * The cloud for real (issue #29, first part): an OpenStackCloud 2022.2 limited to the
 * infrastructure and Keystone, applied with kubectl, driven by `kupenstack controller`
 * started without --cloud (it installs the cloud, so it cannot need one), its charts run as
 * real pods on the test bed's real node from images built from Debian bookworm's packages
 * (test/testbed/os-images): mariadb, memcached and rabbitmq, keystone's db-init, db_sync and
 * bootstrap Jobs, and uwsgi Keystone whose readiness probe GETs /v3. Then that Keystone, asked
 * from the host at its pod's address, issues a token for the admin the install generated,
 * and its catalog lists identity.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const name = `realcloud-${run}`;
const ns = `realcloud-${run}`;
const selector = `kupenstack.io/test-run=${run}`;
const chartsDir = mkdtempSync(join(tmpdir(), 'ks-real-charts-'));
let controller: ControllerProcess | undefined;

interface Cr { metadata: { generation: number }; status?: OpenStackCloudStatus }
interface Pod { metadata: { name: string; labels?: Record<string, string> }; spec: { nodeName?: string }; status: { phase: string; podIP?: string; containerStatuses?: { ready: boolean; containerID?: string; image: string }[] } }
const cr = (): Cr => getJson<Cr>(['get', 'openstackcloud', name]);
const ready = (c: Cr): boolean => c.status?.observedGeneration === 1 && c.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True' && x.observedGeneration === 1) === true;
/** Every pod of the chart placed on the real node only (values the test passes, as an operator would for a node pool). */
const place = { labels: Object.fromEntries(['api', 'job', 'server'].map((k) => [k, { node_selector_key: realNode.label.key, node_selector_value: realNode.label.value }])), pod: { tolerations: onRealNode.tolerations } };

beforeAll(async () => {
  // The images (seconds once built and pushed: cached by their version key; `npm test` builds them in the background meanwhile, test/testbed/prebuild-images.sh: keep its list the same).
  const images = spawnSync('bash', [join(repo, 'test/testbed/os-images/build.sh'), '--push', 'mariadb', 'memcached', 'rabbitmq', 'keystone'], { encoding: 'utf8', timeout: 1_800_000 });
  if (images.status !== 0) throw new Error(`test/testbed/os-images/build.sh failed (${images.status}):\n${images.stderr.slice(-3000)}`);
  // This checkout's charts, unpacked (a chart.path source): the test bed's chart peer may serve another checkout's.
  buildCharts(chartsDir, charts.helm, 'http://127.0.0.1:8190/charts');
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
}, 1_900_000);

afterAll(async () => {
  await controller?.stop();
  kubectl(['delete', 'openstackcloud', name, '--wait=false']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  for (const e of kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${name}`, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['delete', e, '-n', 'default']);
  rmSync(chartsDir, { recursive: true, force: true });
}, 120_000);

describe('an OpenStackCloud installed as real pods', () => {
  it('a controller without --cloud installs infrastructure + Keystone 2022.2 from Debian-built images on the real node to Ready; that Keystone issues a token whose catalog lists identity', async () => {
    expect(controller!.log()).toContain('no cloud given (--cloud)');
    const off = { enabled: false };
    const manifest = {
      apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name, labels: { 'kupenstack.io/test-run': run } },
      spec: {
        release: '2022.2', namespace: ns, chart: { path: join(chartsDir, 'src') },
        services: { keystone: { values: place }, glance: off, placement: off, nova: off, neutron: off, cinder: off, horizon: off },
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
    }, 1_200_000, 2_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; last conditions: ${last}`, { cause: err });
    });
    console.log(`[real-cloud] infrastructure + keystone 2022.2 Ready as real pods in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    const c = cr();
    expect(c.status?.release).toBe('2022.2');
    expect(Object.fromEntries(Object.entries(c.status?.services ?? {}).map(([chart, s]) => [chart, s.ready]))).toEqual({ keystone: true, mariadb: true, memcached: true, rabbitmq: true });

    // Real pods: on the real node, their containers started by containerd from the Debian-built images.
    const pods = getJson<{ items: Pod[] }>(['-n', ns, 'get', 'pods']).items;
    const running = pods.filter((p) => p.status.phase === 'Running');
    expect(running.map((p) => `${p.metadata.labels?.application ?? '?'}/${p.metadata.labels?.component ?? '?'}`).sort()).toEqual(['keystone/api', 'mariadb/server', 'memcached/server', 'rabbitmq/server']);
    expect([...new Set(pods.map((p) => p.spec.nodeName))]).toEqual([realNode.name]);
    const containers = running.flatMap((p) => (p.status.containerStatuses ?? []).map((s) => ({ pod: p.metadata.name, ...s })));
    expect(containers).toHaveLength(4);
    expect(containers.filter((s) => !s.ready || !/^containerd:\/\//.test(s.containerID ?? '') || !/^127\.0\.0\.1:5050\/kupenstack-testbed\/openstack\/(mariadb|memcached|rabbitmq|keystone):2022\.2$/.test(s.image))).toEqual([]);
    // The schema was really synced and bootstrapped by keystone-manage (its own log line).
    expect(kubectlOk(['-n', ns, 'logs', 'job/keystone-db-sync', '-c', 'db-sync'])).toMatch(/Running upgrade .* Initial version[\s\S]*keystone schema synced and bootstrapped/);

    // Keystone answers at its pod's address (the Service's endpoint) and issues a token to the admin the install generated.
    const endpoints = getJson<{ subsets?: { addresses?: { ip: string }[] }[] }>(['-n', ns, 'get', 'endpoints', 'keystone-api']);
    const ip = endpoints.subsets?.[0]?.addresses?.[0]?.ip;
    expect(ip).toMatch(/^10\.89\.0\.\d+$/);
    const version = await fetch(`http://${ip}:5000/v3`);
    expect(version.status).toBe(200);
    expect(((await version.json()) as { version: { id: string } }).version.id).toBe('v3.14');
    const secret = getJson<{ data: Record<string, string> }>(['-n', ns, 'get', 'secret', `kupenstack-cloud-${name}-secrets`]);
    const password = (JSON.parse(Buffer.from(secret.data['secrets.json']!, 'base64').toString('utf8')) as { identityAdmin: string }).identityAdmin;
    const scope = { project: { name: 'admin', domain: { id: 'default' } } };
    const res = await fetch(`http://${ip}:5000/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password } } }, scope } }) });
    expect(res.status).toBe(201);
    expect(res.headers.get('x-subject-token')).toBeTruthy();
    const token = ((await res.json()) as { token: { roles: { name: string }[]; catalog: { type: string; endpoints: { interface: string; url: string; region_id: string }[] }[] } }).token;
    expect(token.roles.map((r) => r.name)).toContain('admin');
    const identity = token.catalog.find((e) => e.type === 'identity');
    expect(identity?.endpoints.find((e) => e.interface === 'public')).toMatchObject({ url: `http://keystone-api.${ns}.svc.cluster.local:5000/v3`, region_id: 'RegionOne' });
    // A wrong password is refused: the token above was a real check.
    const wrong = await fetch(`http://${ip}:5000/v3/auth/tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: `${password}x` } } }, scope } }) });
    expect(wrong.status).toBe(401);
  }, 1_500_000);
});
