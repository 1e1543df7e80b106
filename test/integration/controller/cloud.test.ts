import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OpenStackCloudStatus } from '../../../agent/model/kinds.generated.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * The in-cluster cloud lifecycle (issue #14) on the test bed: `kupenstack controller` as a
 * ServiceAccount holding only deploy/rbac's rights (the cloud ones bound in the cloud's
 * namespace), two replicas with leader election, an OpenStackCloud CR whose charts come from
 * the test-bed Helm repository, kwok pods. The leader installs it (the follower drives nothing)
 * and the CR's status becomes Ready with per-service readiness, observedGeneration and each
 * service's endpoint from the real Keystone's catalog; a replicas change is applied; kill -9 of
 * the leader during a run → the other replica takes over and redoes no finished step (no Job
 * created again, no workload but the changed one touched); a restarted replica follows.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const name = `cloudcr-${run}`;
const ns = `cloudcr-${run}`;
const selector = `kupenstack.io/test-run=${run}`;
const lease = `cloudcr-${run}`;
const os = OpenStackCloud.fromCloudsYaml(testCloudName);
let kubeconfig = '';
const controllers: ControllerProcess[] = [];

interface Cr { metadata: { generation: number }; status?: OpenStackCloudStatus }
interface Workload { metadata: { name: string; uid: string; generation: number }; spec: { replicas?: number } }
const cr = (): Cr => getJson<Cr>(['get', 'openstackcloud', name]);
const condition = (c: Cr, type: string) => c.status?.conditions?.find((x) => x.type === type);
/** Ready at the CR's current generation (the controller acted on this very spec). */
const readyAt = (generation: number) => (): Promise<boolean> => {
  const c = cr();
  return Promise.resolve(c.status?.observedGeneration === generation && condition(c, 'Ready')?.status === 'True' && condition(c, 'Ready')?.observedGeneration === generation);
};
const items = (kind: string): Workload[] => getJson<{ items: Workload[] }>(['-n', ns, 'get', kind]).items;
/** Every Job's uid and every workload's generation: a finished step redone would create a Job again or move a generation. */
function snapshot(): Map<string, string> {
  const out = new Map<string, string>();
  for (const j of items('jobs')) out.set(`Job/${j.metadata.name}`, j.metadata.uid);
  for (const kind of ['deployments', 'statefulsets', 'daemonsets']) for (const w of items(kind)) out.set(`${kind}/${w.metadata.name}`, String(w.metadata.generation));
  return out;
}
async function start(): Promise<ControllerProcess> {
  // Lease 8 s, renew deadline 6 s: on the loaded 2-core bed a 3-s deadline flapped leadership mid-install (a replica starved of CPU for seconds).
  const c = new ControllerProcess(kubeconfig, ['--cloud', testCloudName, '--owner', `cc${run}`, '--project-prefix', 'ks-', '--opt-in-label', `kupenstack.io/project=${run}`, '--no-syncs', '--cloud-selector', selector, '--cloud-resync', '1h', '--leader-elect', '--leader-election-id', lease, '--lease-duration', '8s', '--renew-deadline', '6s', '--retry-period', '1s']);
  controllers.push(c);
  await c.start();
  return c;
}
const leads = (c: ControllerProcess): boolean => c.log().includes(`acquired lease kupenstack-system/${lease}`);
const drives = (c: ControllerProcess): number => (c.log().match(/driving release/g) ?? []).length;
const manifest = (services: Record<string, { replicas: number }> = {}): string =>
  JSON.stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name, labels: { 'kupenstack.io/test-run': run } }, spec: { release: '2025.1', namespace: ns, chart: { repository: charts.repository }, services } });

beforeAll(async () => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  kubectlOk(['create', 'namespace', ns]);
  // What deploy/rbac does for `openstack`, for this run's namespace: the cloud rights bound here only.
  kubectlOk(['create', 'rolebinding', 'kupenstack-controller-cloud', '-n', ns, '--clusterrole', 'kupenstack-controller-cloud', '--serviceaccount', 'kupenstack-system:kupenstack-controller']);
  kubeconfig = serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller');
  // The test bed's pinned helm (the image ships its own on PATH).
  process.env.KUPENSTACK_HELM = charts.helm;
  await start();
  await start();
  await until('a leader', () => Promise.resolve(controllers.some(leads)), 30_000, 200);
}, 300_000);

// A failure under load is read from what each replica said about the cloud and its Lease.
afterEach(({ task }) => {
  if (task.result?.state !== 'fail') return;
  for (const [i, c] of controllers.entries()) {
    const lines = c.log().split('\n').filter((l) => / (cloud|leader|status) {1,3}/.test(l));
    process.stderr.write(`[cloud-cr] replica ${i} (${c.logFile}), its last cloud/leader/status lines:\n${lines.slice(-80).join('\n')}\n`);
  }
});

afterAll(async () => {
  for (const c of controllers) await c.stop();
  kubectl(['delete', 'openstackcloud', name, '--wait=false']);
  kubectl(['delete', 'lease', lease, '-n', 'kupenstack-system']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  for (const e of kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${name}`, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['delete', e, '-n', 'default']);
}, 120_000);

describe('kupenstack controller drives an OpenStackCloud CR', () => {
  it('the leader installs it to Ready with per-service readiness, endpoints and observedGeneration; applies a replicas change; after kill -9 of the leader the other replica redoes no finished step', async () => {
    const t0 = Date.now();
    kubectlOk(['apply', '-f', '-'], { input: manifest() });
    await until('the cloud to be Ready at generation 1', readyAt(1), 600_000, 1_000);
    const installMs = Date.now() - t0;
    const leader = controllers.find(leads)!;
    const follower = controllers.find((x) => x !== leader)!;
    expect(drives(leader)).toBeGreaterThan(0);
    expect(drives(follower)).toBe(0);
    let c = cr();
    expect(c.status?.release).toBe('2025.1');
    for (const type of ['Ready', 'Reconciling', 'Stalled']) expect(condition(c, type)?.observedGeneration, type).toBe(1);
    expect(condition(c, 'Stalled')?.status).toBe('False');
    const services = c.status?.services ?? {};
    const all = ['cinder', 'glance', 'horizon', 'keystone', 'mariadb', 'memcached', 'neutron', 'nova', 'placement', 'rabbitmq'];
    expect(Object.fromEntries(Object.entries(services).map(([chart, s]) => [chart, s.ready]))).toEqual(Object.fromEntries(all.map((chart) => [chart, true])));
    expect(c.status?.failure).toBeUndefined();

    // The endpoints are the real Keystone's public ones; a type it does not list is Missing, not an error.
    const catalog = (await os.session.token({ default: true })).catalog;
    const publicUrl = (type: string): string | undefined => catalog.find((e) => e.type === type)?.endpoints.find((e) => e.interface === 'public')?.url.replace(/\/+$/, '');
    expect(publicUrl('identity')).toBeDefined();
    expect(services.keystone!.endpoint).toEqual({ serviceType: 'identity', url: publicUrl('identity'), state: 'Listed' });
    expect(services.nova!.endpoint).toMatchObject({ serviceType: 'compute', url: publicUrl('compute'), state: 'Listed' });
    expect(services.cinder!.endpoint).toMatchObject({ serviceType: 'volumev3', state: publicUrl('volumev3') ? 'Listed' : 'Missing' });
    expect(services.horizon!.endpoint).toMatchObject({ serviceType: 'dashboard', state: publicUrl('dashboard') ? 'Listed' : 'Missing' });
    expect(services.mariadb!.endpoint).toBeUndefined();

    // Events on the CR (namespace default, the API server's place for a cluster-scoped object's Events).
    const reasons = new Set(getJson<{ items: { reason: string }[] }>(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${name},involvedObject.kind=OpenStackCloud`]).items.map((e) => e.reason));
    for (const r of ['StepStarted', 'GatePassed', 'Ready']) expect(reasons, r).toContain(r);

    // A spec change is applied: keystone's replicas.
    const t1 = Date.now();
    kubectlOk(['patch', 'openstackcloud', name, '--type=merge', '-p', JSON.stringify({ spec: { services: { keystone: { replicas: 3 } } } })]);
    await until('the replicas change to be Ready at generation 2', readyAt(2), 300_000, 1_000);
    const changeMs = Date.now() - t1;
    expect(getJson<Workload>(['-n', ns, 'get', 'deployment', 'keystone-api']).spec.replicas).toBe(3);

    // kill -9 of the leader while a run for generation 3 is under way; the other replica takes over, finishes it and redoes nothing finished.
    const before = snapshot();
    expect([...before.keys()].filter((k) => k.startsWith('Job/')).length).toBeGreaterThan(0);
    const runs = drives(leader);
    kubectlOk(['patch', 'openstackcloud', name, '--type=merge', '-p', JSON.stringify({ spec: { services: { glance: { replicas: 2 } } } })]);
    await until('a run for generation 3 to start', () => Promise.resolve(drives(leader) > runs && /cloud step /.test(leader.log().split('driving release').at(-1) ?? '')), 120_000, 100);
    leader.kill9();
    expect(cr().status?.observedGeneration).not.toBe(3);
    const t2 = Date.now();
    // A restarted replica joins as a follower: the Lease is the survivor's once it expired.
    const restarted = await start();
    await until('the other replica to finish generation 3', readyAt(3), 300_000, 1_000);
    const resumeMs = Date.now() - t2;
    expect(leads(follower)).toBe(true);
    expect(drives(follower)).toBeGreaterThan(0);
    expect(drives(restarted)).toBe(0);
    const after = snapshot();
    const changed = [...after].filter(([k, v]) => before.get(k) !== v).map(([k]) => k);
    expect(changed).toEqual(['deployments/glance-api']);
    expect(getJson<Workload>(['-n', ns, 'get', 'deployment', 'glance-api']).spec.replicas).toBe(2);
    c = cr();
    expect(condition(c, 'Ready')?.observedGeneration).toBe(3);
    console.log(`[cloud-cr] install to Ready ${installMs} ms; replicas change ${changeMs} ms; takeover after kill -9 of the leader to Ready ${resumeMs} ms (lease 8 s) (kwok, ${Object.keys(services).length} charts)`);
  }, 1_200_000);

  it('a leader paused past its renew deadline (SIGSTOP) stops its run when it resumes, writing nothing; the new leader finishes', async () => {
    const live = controllers.filter((x) => x.child);
    const leader = live.find(leads)!;
    const other = live.find((x) => x !== leader)!;
    expect(leads(other)).toBe(false);
    const runs = drives(leader);
    kubectlOk(['patch', 'openstackcloud', name, '--type=merge', '-p', JSON.stringify({ spec: { services: { placement: { replicas: 2 } } } })]);
    await until('a run for generation 4 to start', () => Promise.resolve(drives(leader) > runs && /cloud step /.test(leader.log().split('driving release').at(-1) ?? '')), 120_000, 100);
    leader.child!.kill('SIGSTOP');
    const paused = Date.now();
    await until('the other replica to finish generation 4', readyAt(4), 300_000, 500);
    const takeoverMs = Date.now() - paused;
    expect(leads(other)).toBe(true);
    const seen = leader.log().length;
    const status = JSON.stringify(cr().status);
    // Audit W10: an identical re-apply would be invisible, so every workload gets a value the resumed
    // replica's server-side apply would set back (the cloud label it owns on each object it applies).
    const workloads = ['deployments', 'statefulsets', 'daemonsets', 'jobs'].flatMap((kind) => items(kind).map((w) => `${kind}/${w.metadata.name}`));
    expect(workloads.length).toBeGreaterThan(10);
    for (const w of workloads) kubectlOk(['-n', ns, 'label', w, '--overwrite', 'kupenstack.io/cloud=tampered-by-the-test']);
    leader.child!.kill('SIGCONT');
    await until('the resumed replica to stop its run', () => Promise.resolve(/cloud {3}cloudcr-\w+: run stopped \(/.test(leader.log().slice(seen))), 60_000, 200);
    const after = leader.log().slice(seen);
    expect(after).not.toMatch(/: Ready \(release/);
    // What it wrote would show in the status: the new leader's stays as it was.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(JSON.stringify(cr().status)).toBe(status);
    const reapplied = workloads.filter((w) => kubectlOk(['-n', ns, 'get', w, '-o', 'jsonpath={.metadata.labels.kupenstack\\.io/cloud}']).trim() !== 'tampered-by-the-test');
    expect(reapplied, 'objects the resumed replica applied again').toEqual([]);
    expect(getJson<Workload>(['-n', ns, 'get', 'deployment', 'placement-api']).spec.replicas).toBe(2);
    console.log(`[cloud-cr] leader paused: the other replica finished the run in ${takeoverMs} ms; the resumed one stopped: ${/run stopped \(([^)]*)\)/.exec(after)?.[1] ?? '?'}`);
  }, 600_000);
});
