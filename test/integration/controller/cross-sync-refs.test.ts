import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Issue 48, part 3: references across Syncs, against the real API server, the test bed's Git server
 * and the real OpenStack. Sync `apps` (dependsOn `infra`) declares a Subnet whose networkRef names
 * the Network `base` that `infra` declares in the same namespace: `apps` waits for `infra`, then
 * applies, the subnet on that network in Neutron. A third Sync whose Subnet names a network no
 * dependency declares is refused with the file and line, naming the dependency. A revision of
 * `infra` that drops `base` while `apps` references it is held (ReferencedByDependent): refused naming
 * the reference, its last good revision applied, the network still in Neutron, and `apps` not kept
 * waiting by it; once `apps` drops its reference, `infra`'s revision applies on its next timed run and
 * the network goes.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const ns = `xsync-${run}`;
const system = 'kupenstack-system';
const optIn = `xsync-${run}`;
const prefix = 'ks-';
const gitSecret = `xsync-${run}-git`;
const infra = `infra-${run}`;
const apps = `apps-${run}`;
const stray = `stray-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
let git: TestRepo;

interface Cond { type: string; status: string; reason: string; message: string }
interface Status { lastAppliedRevision?: string; conditions?: Cond[]; diagnostics?: string[] }
const status = (name: string): Status => getJson<{ status?: Status }>(['get', 'sync.kupenstack.io', name]).status ?? {};
const cond = (name: string, type = 'Ready'): Cond | undefined => status(name).conditions?.find((c) => c.type === type);
const crNames = (plural: string): string[] => kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.replace(/^.*\//, '')).sort();

async function neutron<T extends { name: string; id: string }>(path: 'networks' | 'subnets'): Promise<(T & { network_id?: string })[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? cloud.client('network').list(`/${path}`, path, { project_id: p.id }) : [];
}

function applySync(name: string, spec: Record<string, unknown>): void {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds/syncs.kupenstack.io.yaml')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'kupenstack.io/v1alpha1',
      kind: 'Sync',
      metadata: { name, labels: { 'kupenstack.io/test-run': run } },
      spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, interval: '5s', retryInterval: '2s', timeout: '60s', wait: true, massDeleteThreshold: 100, serviceAccountName: 'gitops', serviceAccountNamespace: ns, ...spec },
    }),
  });
}

const network = (name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec: {}\n`;
const subnet = (name: string, net: string, cidr: string): string =>
  `apiVersion: kupenstack.io/v1alpha1\nkind: Subnet\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  networkRef: {name: ${net}}\n  cidr: ${cidr}\n`;

beforeAll(async () => {
  prepareSyncBed({ system, namespaces: [ns], optIn, gitopsIn: ns, gitSecret });
  git = await TestRepo.create('xsync');
  await git.commit(
    { 'infra/base.yaml': network('base'), 'infra/edge.yaml': network('edge'), 'apps/web.yaml': subnet('web', 'base', '10.78.0.0/24'), 'stray/db.yaml': subnet('db', 'nosuch', '10.79.0.0/24') },
    'infra, apps and a stray reference',
  );
  git.push();
  const config = join(mkdtempSync(join(tmpdir(), 'ks-xsync-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), ['-c', config, '--cloud', testCloudName, '--owner', `xs${run}`, '--project-prefix', prefix, '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--listen', '127.0.0.1:0', '--sync-selector', `kupenstack.io/test-run=${run}`, '--log-format', 'json']);
  await controller.start();
}, 600_000);

afterAll(async () => {
  for (const s of [apps, stray, infra]) kubectl(['delete', 'sync.kupenstack.io', s, '--wait=false']);
  for (const plural of ['subnets', 'networks']) kubectl(['delete', `${plural}.kupenstack.io`, '--all', '-n', ns, '--wait=false']);
  await until('the networks to be deleted', async () => (await neutron('networks')).length === 0, 120_000).catch(() => undefined);
  await controller?.stop();
  for (const plural of ['subnets', 'networks'])
    for (const name of kubectl(['get', `${plural}.kupenstack.io`, '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  for (const s of await neutron('subnets')) await cloud.client('network').remove(`/subnets/${s.id}`).catch(() => undefined);
  for (const n of await neutron('networks')) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  if (p) await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
  kubectl(['delete', 'secret', gitSecret, '-n', system]);
  await git?.dispose();
}, 300_000);

describe('references across Syncs (dependsOn)', () => {
  it("apps' Subnet on infra's Network: apps waits, then applies once infra is Ready, the subnet on that network in Neutron", async () => {
    applySync(apps, { path: 'apps', dependsOn: [{ name: infra }] });
    await until('apps to wait for infra', () => Promise.resolve(cond(apps)?.reason === 'DependencyNotReady'), 60_000, 500);
    expect(crNames('subnets')).toEqual([]);
    applySync(infra, { path: 'infra' });
    await until('infra to be Ready', () => Promise.resolve(cond(infra)?.status === 'True'), 240_000, 1000);
    await until('apps to be Ready', () => Promise.resolve(cond(apps)?.status === 'True'), 240_000, 1000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; its status: ${JSON.stringify(status(apps))}`, { cause: err });
    });
    const base = (await neutron('networks')).find((n) => n.name === 'base');
    expect(base, 'the network base in Neutron').toBeDefined();
    const web = (await neutron('subnets')).find((s) => s.name === 'web');
    expect(web?.network_id, 'the subnet web on the network base').toBe(base!.id);
  }, 600_000);

  it('a reference no dependency declares is refused at its file and line, naming the Sync it depends on', async () => {
    applySync(stray, { path: 'stray', dependsOn: [{ name: infra }] });
    await until('stray to be rejected', () => Promise.resolve(cond(stray)?.reason === 'ValidationFailed'), 120_000, 1000);
    expect(status(stray).diagnostics).toEqual([
      `stray/db.yaml:7:22: error [ref.missing] Subnet/db at spec.networkRef.name: no Network named "nosuch" in namespace "${ns}", and Sync "${infra}" this one depends on does not declare one; declare it or fix the name`,
    ]);
    expect(crNames('subnets')).toEqual(['web']);
  }, 180_000);

  it("infra dropping the Network apps references is held, naming the reference; once apps drops it, infra's revision applies and the network goes", async () => {
    const applied = status(infra).lastAppliedRevision;
    await git.commit({ 'infra/base.yaml': null }, 'infra drops base');
    git.push();
    const dropping = `main@sha1:${git.head()}`;
    await until("infra's new revision to be held", () => Promise.resolve(cond(infra)?.reason === 'ReferencedByDependent' && cond(infra)!.message.includes(dropping)), 120_000, 1000);
    expect(cond(infra, 'Stalled')).toMatchObject({ status: 'True', reason: 'ReferencedByDependent' });
    expect(kubectlOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${infra},reason=ReferencedByDependent`, '-o', 'name']).trim()).not.toBe('');
    expect(cond(infra)?.message).toBe(
      `revision ${dropping} rejected, nothing from it applied; ${applied} stays applied: Network "base" in namespace "${ns}" is still referenced by Sync "${apps}" (Subnet ${ns}/web spec.networkRef): this revision drops it; remove that reference first`,
    );
    expect(status(infra).lastAppliedRevision).toBe(applied);
    expect(crNames('networks')).toContain('base');
    expect((await neutron('networks')).map((n) => n.name)).toContain('base');

    await git.commit({ 'apps/web.yaml': null, 'apps/keep.yaml': network('apps-own') }, 'apps drops its subnet');
    git.push();
    const head = `main@sha1:${git.head()}`;
    // apps is not kept waiting by infra's held revision (its last good one is applied): it drops the reference.
    await until('apps to apply its revision without the reference', () => Promise.resolve(status(apps).lastAppliedRevision === head), 240_000, 1000);
    await until('infra to apply the revision without base', () => Promise.resolve(status(infra).lastAppliedRevision === head && cond(infra)?.status === 'True'), 240_000, 1000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; infra: ${JSON.stringify(status(infra))}; apps: ${JSON.stringify(status(apps))}`, { cause: err });
    });
    await until('the network base to leave Neutron', async () => !(await neutron('networks')).some((n) => n.name === 'base'), 240_000, 1000);
    expect(crNames('subnets')).toEqual([]);
  }, 600_000);
});
