import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { propDigest } from '../../../agent/glance/version-rules.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { pushDiskAs, qcow2Disk, registry } from '../kinds/image-oci-fixtures.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * An ImageRollout rolls a tag move out in waves (real API server, real
 * registry on 5050, real Glance, real Nova with its fake driver). Two canary
 * namespaces (labelled ring=canary) and one other, each with an Image
 * following repo:stable and a VM booted from it. A tag move reaches the
 * canaries first; the other namespace keeps the old digest during the 20 s
 * soak and follows once the canaries stayed healthy. Then a second move: a
 * canary's server forced to ERROR (os-resetState, as admin) fails the wave,
 * the canaries' Images go back to the previous digest and the other namespace
 * never moves. Status and Events show each wave.
 */
const run = randomBytes(3).toString('hex');
const owner = `iro${run}`;
const prefix = 'ks-';
const optIn = `iro-${run}`;
const canaries = [`iro-${run}-c1`, `iro-${run}-c2`];
const other = `iro-${run}-other`;
const all = [...canaries, other];
const system = 'kupenstack-system';
const repo = `rollout/os-${run}`;
const rolloutName = `os-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
const digests: string[] = [];

interface Cr {
  metadata: { generation?: number };
  status?: { observedGeneration?: number; digest?: string; observed?: { digest?: string }; conditions?: { type: string; status: string; reason: string; message: string }[] };
}
interface Rollout {
  status?: {
    stableDigest?: string;
    targetDigest?: string;
    currentWave?: string;
    waves?: { name: string; phase: string; namespaces?: string[]; startedAt?: string; message?: string }[];
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

function cr(kind: string, ns: string, name: string): Cr | undefined {
  const r = kubectl(['get', `${kind}.kupenstack.io`, name, '-n', ns, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as Cr) : undefined;
}
const ready = (o: Cr | undefined): boolean => o?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation;
const crDigest = (ns: string): string | undefined => {
  const o = cr('images', ns, 'os');
  return o?.status?.digest ?? o?.status?.observed?.digest;
};
const rollout = (): Rollout => getJson<Rollout>(['get', 'imagerollouts.kupenstack.io', rolloutName]);
const phases = (): string[] => (rollout().status?.waves ?? []).map((w) => `${w.name}:${w.phase}`);

function rolloutEvents(): { reason: string; message: string; type: string }[] {
  return getJson<{ items: { reason: string; message: string; type: string; involvedObject: { kind: string; name: string } }[] }>(['get', 'events', '-n', 'default']).items.filter(
    (e) => e.involvedObject.kind === 'ImageRollout' && e.involvedObject.name === rolloutName,
  );
}

async function projectId(ns: string): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

/** The version Glance shows under the Image's name in the namespace's project (what a user boots). */
async function glanceDigest(ns: string): Promise<unknown> {
  const project = await projectId(ns);
  if (!project) return undefined;
  const images = await (await cloud.forProject(project)).image.list<Record<string, unknown>>('/images', 'images', { owner: project, name: 'os' });
  return images.find((i) => i.status === 'active' && !i.os_hidden)?.[propDigest];
}

const stack = (ns: string, cidr: number): string =>
  [
    `kind: Network\nmetadata: {name: net, namespace: ${ns}}\nspec: {}`,
    `kind: Subnet\nmetadata: {name: net, namespace: ${ns}}\nspec: {networkRef: {name: net}, cidr: 10.${cidr}.0.0/24}`,
    `kind: Flavor\nmetadata: {name: tiny, namespace: ${ns}}\nspec: {vcpus: 1, ram: 64, disk: 1}`,
    `kind: Image\nmetadata: {name: os, namespace: ${ns}}\nspec: {interval: 1h, keep: 3, source: {oci: {repository: "${registry}/${repo}", tag: stable, insecure: true, sharing: private}}}`,
    // No healing: an ERROR stays (the rollout must see it, not a heal).
    `kind: VirtualMachine\nmetadata: {name: vm, namespace: ${ns}}\nspec: {flavorRef: {name: tiny}, imageRef: {name: os}, networks: [{networkRef: {name: net}}], heal: {maxAttempts: 0}}`,
  ]
    .map((d) => `apiVersion: kupenstack.io/v1alpha1\n${d}`)
    .join('\n---\n');

const rolloutYaml = `apiVersion: kupenstack.io/v1alpha1
kind: ImageRollout
metadata: {name: ${rolloutName}}
spec:
  source: {repository: "${registry}/${repo}", tag: stable, insecure: true}
  interval: 2s
  waves:
    - name: canary
      namespaceSelector: {matchLabels: {ring: canary-${run}}}
      soak: 20s
  health: {progressDeadline: 5m}
`;

const rolloutRbac = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: iro-${run}-rollouts}
rules:
  - {apiGroups: [kupenstack.io], resources: [imagerollouts], verbs: [get, list, watch, update, patch]}
  - {apiGroups: [kupenstack.io], resources: [imagerollouts/status], verbs: [get, update, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: iro-${run}-rollouts}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: iro-${run}-rollouts}
subjects: [{kind: ServiceAccount, name: kupenstack-controller, namespace: ${system}}]
`;

async function allOn(namespaces: readonly string[], digest: string): Promise<boolean> {
  for (const ns of namespaces) if (crDigest(ns) !== digest || !ready(cr('images', ns, 'os')) || (await glanceDigest(ns)) !== digest) return false;
  return true;
}

const withLog = (err: unknown): never => {
  throw new Error(`${(err as Error).message}\nrollout: ${JSON.stringify(rollout().status)}\n${controller.log().slice(-5000)}`, { cause: err });
};

beforeAll(async () => {
  prepareControllerBed({ system, namespaces: all, optIn });
  for (const ns of canaries) kubectlOk(['label', 'namespace', ns, `ring=canary-${run}`]);
  // The shared plane: another checkout's test may apply its own deploy/rbac meanwhile (one without ImageRollouts, before the
  // merge). This grants the controller what deploy/rbac/controller.yaml grants for them (test/unit/rbac.test.ts checks that file).
  kubectlOk(['apply', '-f', '-'], { input: rolloutRbac });
  digests.push(await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk()));
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '30s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs',
  ]);
  await controller.start();
  kubectlOk(['apply', '-f', '-'], { input: rolloutYaml });
  kubectlOk(['apply', '-f', '-'], { input: all.map((ns, i) => stack(ns, 140 + i)).join('\n---\n') });
  await until('every Image on the first digest and every VM Ready', async () => (await allOn(all, digests[0]!)) && all.every((ns) => ready(cr('virtualmachines', ns, 'vm'))), 400_000, 2000).catch(withLog);
  await until('the rollout Ready on the first digest', () => Promise.resolve(rollout().status?.stableDigest === digests[0] && rollout().status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True'), 60_000).catch(withLog);
}, 600_000);

afterAll(async () => {
  kubectl(['delete', 'imagerollouts.kupenstack.io', rolloutName, '--wait=false']);
  if (controller?.child) {
    for (const ns of all) kubectl(['delete', 'namespace', ns, '--wait=false']);
    await until('the projects to be deleted', async () => (await Promise.all(all.map(projectId))).every((p) => p === undefined), 300_000, 2000).catch(() => undefined);
  }
  await controller?.stop();
  kubectl(['delete', 'clusterrolebinding', `iro-${run}-rollouts`, '--ignore-not-found']);
  kubectl(['delete', 'clusterrole', `iro-${run}-rollouts`, '--ignore-not-found']);
  for (const ns of all)
    for (const kind of ['virtualmachines', 'subnets', 'networks', 'flavors', 'images']) {
      const list = kubectl(['get', `${kind}.kupenstack.io`, '-n', ns, '-o', 'name']);
      for (const name of list.stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
}, 600_000);

describe('ImageRollout: a tag move in waves', () => {
  it('moves the canaries first, holds the other namespace over the soak, then rolls the rest', async () => {
    digests.push(await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk()));
    const [d1, d2] = digests as [string, string];
    await until('the canaries on the new digest', () => allOn(canaries, d2), 300_000, 1000).catch(withLog);
    // The other namespace is held: while the canary wave is not done, it keeps the old digest, in Kubernetes and in Glance.
    await until('the canary wave soaking', () => Promise.resolve(phases().includes('canary:Soaking')), 300_000, 1000).catch(withLog);
    expect(rollout().status).toMatchObject({ stableDigest: d1, targetDigest: d2, currentWave: 'canary' });
    expect(rollout().status?.waves?.find((w) => w.name === 'rest')).toMatchObject({ phase: 'Pending', namespaces: [other] });
    expect(rollout().status?.waves?.find((w) => w.name === 'canary')?.namespaces).toEqual([...canaries].sort());
    const seen: [unknown, unknown][] = [];
    for (let i = 0; i < 5 && phases().includes('canary:Soaking'); i++) {
      seen.push([crDigest(other), await glanceDigest(other)]);
      await sleep(2000);
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).toEqual(seen.map(() => [d1, d1]));
    // Healthy over the soak: the rest follows, and the new digest is the stable one.
    await until('the other namespace on the new digest', () => allOn([other], d2), 300_000, 1000).catch(withLog);
    await until('the rollout done', () => Promise.resolve(rollout().status?.stableDigest === d2), 120_000).catch(withLog);
    expect(phases()).toEqual(['canary:Succeeded', 'rest:Succeeded']);
    expect(rollout().status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'RolledOut' });
    const reasons = rolloutEvents().map((e) => `${e.reason}`);
    for (const r of ['RolloutStarted', 'WaveProgressing', 'WaveSoaking', 'WaveSucceeded', 'RolloutRolledOut']) expect(reasons).toContain(r);
    expect(rolloutEvents().find((e) => e.reason === 'WaveSoaking')?.message).toMatch(/^wave canary \(2 namespaces\) Soaking: healthy; soaking until /);
  }, 900_000);

  it('fails the wave on a canary server in ERROR: the canaries go back to the previous digest, the other namespace never moves', async () => {
    const [, d2] = digests as [string, string];
    // A longer soak this time: the fault below must land while the canary wave is still being judged, however loaded the bed.
    kubectlOk(['patch', 'imagerollouts.kupenstack.io', rolloutName, '--type=json', '-p', '[{"op": "replace", "path": "/spec/waves/0/soak", "value": "5m"}]']);
    digests.push(await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk()));
    const d3 = digests[2]!;
    let otherMoved = false;
    const watchOther = setInterval(() => {
      if (crDigest(other) !== d2) otherMoved = true;
    }, 1000);
    try {
      await until('the canaries on the third digest', () => allOn(canaries, d3), 300_000, 1000).catch(withLog);
      // The fault: Nova puts a canary's server in ERROR (os-resetState, as nova reset-state --error does).
      const compute = await cloud.adminCompute();
      const project = await projectId(canaries[0]!);
      const [server] = (await compute.list<{ id: string; name: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id: project! })).filter((s) => s.name === 'vm');
      await compute.post(`/servers/${server!.id}/action`, { 'os-resetState': { state: 'error' } });
      await until('the canary wave Failed', () => Promise.resolve(phases().includes('canary:Failed')), 120_000, 1000).catch(withLog);
      const failed = rollout().status!;
      expect(failed).toMatchObject({ stableDigest: d2, targetDigest: d3, currentWave: 'canary' });
      expect(failed.waves?.find((w) => w.name === 'canary')?.message).toMatch(new RegExp(`server in ERROR: ${canaries[0]}/vm`));
      expect(failed.conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'WaveFailed' });
      expect(failed.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'WaveFailed' });
      // The canaries' Images go back to the stable digest (a re-point: the version is kept in Glance).
      await until('the canaries back on the previous digest', () => allOn(canaries, d2), 300_000, 1000).catch(withLog);
      expect(phases()).toEqual(['canary:Failed', 'rest:Pending']);
      const warning = rolloutEvents().find((e) => e.reason === 'WaveFailed');
      expect(warning).toMatchObject({ type: 'Warning' });
      expect(warning?.message).toMatch(/^wave canary \(2 namespaces\) Failed: server in ERROR/);
    } finally {
      clearInterval(watchOther);
    }
    expect(otherMoved).toBe(false);
    expect(await glanceDigest(other)).toBe(d2);
  }, 900_000);
});
