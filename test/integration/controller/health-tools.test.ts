import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Watch, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { argocdHealth, argocdHealthScript, ensureKstatus, kstatus } from '../../testbed/health-tools/peer.ts';
import { builtHelm } from '../../testbed/kubernetes/peer.ts';
import { parse } from 'yaml';
import { adminKubeconfig, ControllerProcess, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Issue 48, part 4: other GitOps tools read KupenStack's health. The in-cluster controller, against
 * the real API server, OpenStack and Git server, makes real objects in each state: a Network
 * Ready, a Volume Reconciling (Cinder's `creating`, caught by a watch), a Network Stalled (an
 * import whose filter matches nothing), a Network being deleted (a finalizer of this test holds it
 * after the controller's own is gone), a Sync Ready, then suspended. Each object as the API server
 * returns it goes to the chart's Argo CD health script run by a real Lua interpreter (Debian's
 * lua5.4, as Argo CD runs it: `obj` set, `hs` returned) and to Flux's kstatus library (built from
 * the Go module proxy: test/testbed/health-tools).
 */
const run = randomBytes(3).toString('hex');
const ns = `health-${run}`;
const system = 'kupenstack-system';
const optIn = `health-${run}`;
const gitSecret = `health-${run}-git`;
const sync = `health-${run}`;
const hold = 'kupenstack.test/hold';

interface Cond { type: string; status: string; reason: string; message: string }
interface Obj extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Cond[] };
}

const cond = (o: Obj | undefined, type: string): Cond | undefined => o?.status?.conditions?.find((c) => c.type === type);
const get = (plural: string, name: string): Obj | undefined => {
  const r = kubectl(['get', `${plural}.kupenstack.io`, name, ...(plural === 'syncs' ? [] : ['-n', ns]), '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as Obj) : undefined;
};
const apply = (yaml: string): string => kubectlOk(['apply', '-f', '-'], { input: yaml });

let controller: ControllerProcess;
let git: TestRepo;
/** Every Volume the watch saw, in order: the Reconciling one is short-lived. */
const volumes: Obj[] = [];
let stopWatch: (() => void) | undefined;
/** The real objects, by the state they were caught in. */
const caught: Record<string, Obj> = {};

beforeAll(async () => {
  // A fresh machine's run builds the kstatus check in the background (test/testbed/health-tools/up.sh): waited for here.
  ensureKstatus();
  prepareSyncBed({ system, namespaces: [ns], optIn, gitopsIn: ns, gitSecret });
  git = await TestRepo.create('health');
  await git.commit({ 'nets/synced.yaml': `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: synced, namespace: ${ns}}\nspec: {}\n` }, 'one network');
  git.push();
  const req = await new Watch(loadKubeConfig({ kubeconfig: adminKubeconfig })).watch(
    `/apis/kupenstack.io/v1alpha1/namespaces/${ns}/volumes`,
    {},
    (_type: string, obj: Obj) => volumes.push(obj),
    () => undefined,
  );
  stopWatch = () => req.abort();
  const config = join(mkdtempSync(join(tmpdir(), 'ks-health-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  controller = new ControllerProcess(
    serviceAccountKubeconfig(system, 'kupenstack-controller'),
    ['-c', config, '--cloud', testCloudName, '--owner', `hl${run}`, '--project-prefix', 'ks-', '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--listen', '127.0.0.1:0', '--sync-selector', `kupenstack.io/test-run=${run}`, '--log-format', 'json'],
  );
  await controller.start();
}, 1_200_000);

afterAll(async () => {
  stopWatch?.();
  kubectl(['delete', 'sync.kupenstack.io', sync, '--wait=false']);
  kubectl(['patch', 'networks.kupenstack.io', 'going', '-n', ns, '--type=json', '-p', `[{"op":"remove","path":"/metadata/finalizers"}]`]);
  for (const plural of ['volumes', 'networks']) kubectl(['delete', `${plural}.kupenstack.io`, '--all', '-n', ns, '--wait=false']);
  await until('the objects to be gone', () => Promise.resolve(kubectl(['get', 'volumes.kupenstack.io,networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.trim() === ''), 120_000).catch(() => undefined);
  await controller?.stop();
  for (const plural of ['volumes', 'networks'])
    for (const name of kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  kubectl(['delete', 'secret', gitSecret, '-n', system]);
  await git?.dispose();
}, 300_000);

describe("Argo CD's health script and Flux's kstatus on real KupenStack objects", () => {
  it('the controller makes objects Ready, Reconciling, Stalled and being deleted, and a Sync Ready then suspended', async () => {
    apply(`apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: ready, namespace: ${ns}}\nspec: {}\n`);
    apply(`apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: stalled, namespace: ${ns}}\nspec:\n  managementPolicy: unmanaged\n  import: {filter: {name: no-such-network-${run}}}\n`);
    apply(`apiVersion: kupenstack.io/v1alpha1\nkind: Volume\nmetadata: {name: building, namespace: ${ns}}\nspec: {size: 1}\n`);
    apply(`apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: going, namespace: ${ns}, finalizers: [${hold}]}\nspec: {}\n`);
    await until('the network to be Ready', () => Promise.resolve(cond(get('networks', 'ready'), 'Ready')?.status === 'True'), 240_000, 1000);
    caught.ready = get('networks', 'ready')!;
    await until('the import to be Stalled', () => Promise.resolve(cond(get('networks', 'stalled'), 'Stalled')?.status === 'True'), 120_000, 1000);
    caught.stalled = get('networks', 'stalled')!;
    expect(cond(caught.stalled, 'Stalled')?.reason).toBe('ImportRefused');
    await until('the volume to be Ready', () => Promise.resolve(cond(get('volumes', 'building'), 'Ready')?.status === 'True'), 240_000, 1000);
    // Cinder answers a create with `creating`: the controller wrote Reconciling before Ready.
    const reconciling = volumes.find((v) => cond(v, 'Reconciling')?.status === 'True');
    expect(reconciling, `a Volume status with Reconciling True among ${volumes.length} watched`).toBeDefined();
    caught.reconciling = reconciling!;

    await until('the going network to be Ready', () => Promise.resolve(cond(get('networks', 'going'), 'Ready')?.status === 'True'), 240_000, 1000);
    kubectlOk(['delete', 'networks.kupenstack.io', 'going', '-n', ns, '--wait=false']);
    // The controller deletes the OpenStack network and removes its own finalizer; the test's holds the object.
    await until('only the hold left on the deleted network', () => Promise.resolve(JSON.stringify(get('networks', 'going')?.metadata?.finalizers) === JSON.stringify([hold])), 120_000, 1000);
    caught.deleting = get('networks', 'going')!;
    expect(caught.deleting.metadata?.deletionTimestamp).toBeDefined();

    kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'kupenstack.io/v1alpha1',
        kind: 'Sync',
        metadata: { name: sync, labels: { 'kupenstack.io/test-run': run } },
        spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, path: 'nets', interval: '5s', retryInterval: '2s', timeout: '60s', wait: true, serviceAccountName: 'gitops', serviceAccountNamespace: ns },
      }),
    });
    await until('the Sync to be Ready', () => Promise.resolve(cond(get('syncs', sync), 'Ready')?.status === 'True'), 240_000, 1000);
    caught.syncReady = get('syncs', sync)!;
    kubectlOk(['patch', 'sync.kupenstack.io', sync, '--type=merge', '-p', '{"spec":{"suspend":true}}']);
    await until('the Sync to show Suspended', () => Promise.resolve(cond(get('syncs', sync), 'Reconciling')?.reason === 'Suspended'), 60_000, 500);
    caught.syncSuspended = get('syncs', sync)!;
    console.log(`[health-tools] caught: ${JSON.stringify(Object.fromEntries(Object.entries(caught).map(([k, o]) => [k, o.status])))}`);
  }, 900_000);

  it('Argo CD (the chart script, lua5.4): Healthy, Progressing, Degraded, Progressing; the Sync Healthy, then Suspended', () => {
    const verdicts = Object.fromEntries(Object.entries(caught).map(([k, o]) => [k, argocdHealth(o)]));
    console.log(`[health-tools] Argo CD: ${JSON.stringify(verdicts)}`);
    expect(verdicts.ready).toEqual({ status: 'Healthy', message: cond(caught.ready, 'Ready')!.message });
    expect(verdicts.reconciling?.status).toBe('Progressing');
    expect(verdicts.reconciling?.message).toBe(cond(caught.reconciling, 'Ready')!.message);
    expect(verdicts.stalled).toEqual({ status: 'Degraded', message: cond(caught.stalled, 'Stalled')!.message });
    expect(verdicts.deleting).toEqual({ status: 'Progressing', message: 'being deleted: the OpenStack object goes first' });
    expect(verdicts.syncReady?.status).toBe('Healthy');
    expect(verdicts.syncSuspended).toEqual({ status: 'Suspended', message: cond(caught.syncSuspended, 'Reconciling')!.message });
  });

  it("Flux's kstatus (the library): our status has what it reads, and it computes Current, InProgress, Failed", () => {
    // What kstatus reads: observedGeneration equal to metadata.generation, and the three conditions with their polarities.
    expect(Object.keys(caught)).toEqual(['ready', 'stalled', 'reconciling', 'deleting', 'syncReady', 'syncSuspended']);
    for (const [k, o] of Object.entries(caught)) {
      // Setting deletionTimestamp moves a custom resource's generation; the controller's last status is older.
      if (k === 'deleting') continue;
      expect(o.status?.observedGeneration, k).toBe(o.metadata?.generation);
      for (const type of ['Ready', 'Reconciling', 'Stalled']) expect(cond(o, type), `${k} ${type}`).toBeDefined();
    }
    expect(cond(caught.ready, 'Reconciling')?.status).toBe('False');
    expect(cond(caught.ready, 'Stalled')?.status).toBe('False');
    expect(cond(caught.stalled, 'Ready')?.status).toBe('False');
    const names = Object.keys(caught);
    const verdicts = Object.fromEntries(kstatus(names.map((k) => caught[k])).map((v, i) => [names[i]!, v]));
    console.log(`[health-tools] kstatus: ${JSON.stringify(verdicts)}`);
    expect(verdicts.ready?.status).toBe('Current');
    expect(verdicts.reconciling?.status).toBe('InProgress');
    expect(verdicts.stalled?.status).toBe('Failed');
    expect(verdicts.stalled?.message).toBe(cond(caught.stalled, 'Stalled')!.message);
    // kstatus's own word for an object with a deletionTimestamp: Flux's wait then waits for it to be gone.
    expect(verdicts.deleting?.status).toBe('Terminating');
    expect(verdicts.syncReady?.status).toBe('Current');
    // kstatus has no suspended state: a suspended Sync whose applied revision is Ready stays Current.
    expect(verdicts.syncSuspended?.status).toBe('Current');
  });

  it("the chart ships that script under Argo CD's key for every kind of its CRDs, and nothing when argocdHealth.enabled is false", () => {
    const chart = join(import.meta.dirname, '../../../deploy/chart/kupenstack');
    const render = (...set: string[]) => spawnSync(builtHelm(), ['template', 'ks', chart, '--show-only', 'templates/argocd-health.yaml', ...set], { encoding: 'utf8' });
    const r = render();
    expect(r.status, r.stderr).toBe(0);
    const cm = parse(r.stdout) as { kind: string; metadata: { name: string }; data: Record<string, string> };
    expect([cm.kind, cm.metadata.name]).toEqual(['ConfigMap', 'ks-kupenstack-argocd-health']);
    const kinds = readdirSync(join(chart, 'crds')).map((f) => (parse(readFileSync(join(chart, 'crds', f), 'utf8')) as { spec: { group: string; names: { kind: string } } }).spec);
    // The 20 kinds of schemas/ and the NamespaceSync (derived from the Sync's schema: agent/schema/namespace-sync.ts).
    expect(kinds.length).toBe(21);
    expect(Object.keys(cm.data).sort()).toEqual(kinds.map((k) => `resource.customizations.health.${k.group}_${k.names.kind}`).sort());
    const script = readFileSync(argocdHealthScript, 'utf8');
    for (const [key, value] of Object.entries(cm.data)) expect(value.trimEnd(), key).toBe(script.trimEnd());
    expect(render('--set', 'argocdHealth.enabled=false').stderr).toMatch(/could not find template templates\/argocd-health.yaml/);
  });
});
