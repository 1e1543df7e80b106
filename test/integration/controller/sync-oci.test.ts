import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { pushManifests } from '../../../oci/push-manifests.ts';
import { freePort } from '../../support/agent-harness.ts';
import { testCloudName } from '../../support/context.ts';
import { startNotifyingRegistry, type NotifyingRegistry } from '../../support/notifying-registry.ts';
import { signing } from '../../testbed/signing/peer.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * A Sync whose manifests come from an OCI artifact (`spec.source.oci`),
 * against the real kube-apiserver, a distribution 2.8 registry that sends
 * push notifications to the controller (test/testbed/registry/notifying.sh),
 * the real cosign and the real OpenStack: a folder pushed with `kupenstack
 * push manifests` and signed with the trusted key converges to Neutron; a
 * tag moved to a new artifact is applied at the registry's notification
 * (the Sync's interval is an hour); an artifact signed by another key is
 * refused and nothing of it is applied, until it carries the trusted
 * signature. A tenant's NamespaceSync from an OCI artifact is run by the
 * same notification.
 */
const exec = promisify(execFile);
const repoRoot = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const owner = `so${run}`;
const ns = `sync-oci-${run}`;
const tenantNs = `sync-oci-${run}-team`;
const tenantSync = 'team-artifact';
const tenantRepository = `manifests/oci-${run}-team`;
const system = 'kupenstack-system';
const syncName = `sync-oci-${run}`;
const optIn = `sync-oci-${run}`;
const prefix = 'ks-';
const gitSecret = `sync-oci-${run}-git`;
const hookSecret = `sync-oci-${run}-hook`;
const keySecret = `sync-oci-${run}-cosign`;
const hookToken = randomBytes(16).toString('hex');
const repository = `manifests/oci-${run}`;
const tag = 'live';
const password = `sync-oci-${run}`;
const dir = mkdtempSync(join(tmpdir(), 'ks-sync-oci-'));
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
let registry: NotifyingRegistry;

interface Cond { type: string; status: string; reason: string; message: string }
interface SyncStatus { lastAppliedRevision?: string; lastFetchedRevision?: string; conditions?: Cond[]; inventory?: { name: string }[] }

const network = (name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  mtu: 1400\n`;
const syncStatus = (): SyncStatus => getJson<{ status?: SyncStatus }>(['get', 'sync.kupenstack.io', syncName]).status ?? {};
const condition = (type: string): Cond | undefined => syncStatus().conditions?.find((c) => c.type === type);
const crNames = (): string[] => kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.replace(/^.*\//, '')).sort();
const crId = (name: string): string | undefined => (JSON.parse(kubectl(['get', 'network.kupenstack.io', name, '-n', ns, '-o', 'json']).stdout || '{}') as { status?: { id?: string } }).status?.id;

async function neutronNetworks(space = ns): Promise<{ id: string; name: string }[]> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${space}` });
  return p ? cloud.client('network').list('/networks', 'networks', { project_id: p.id }) : [];
}

async function cosign(...args: string[]): Promise<void> {
  await exec(signing.cosign, args, { cwd: dir, env: { ...process.env, COSIGN_PASSWORD: password, COSIGN_YES: 'true' } });
}

/** Signs `repository@digest` with a key of dir, in the classic `sha256-<hex>.sig` layout (distribution 2.8 has no referrers API). */
async function sign(key: 'trusted' | 'other', digest: string): Promise<void> {
  await cosign('sign', '--key', join(dir, `${key}.key`), '--tlog-upload=false', '--use-signing-config=false', '--allow-http-registry', '--allow-insecure-registry', '--new-bundle-format=false', `${registry.host}/${repository}@${digest}`);
}

/**
 * A folder of these networks, pushed in this process (a node start per push costs seconds on the
 * shared cores) to a staging tag, signed with `key`, then pushed again to the followed tag: the
 * same folder gives the same digest, and the notification of the move finds it signed.
 */
async function publish(names: string[], key: 'trusted' | 'other'): Promise<string> {
  const folder = mkdtempSync(join(dir, 'manifests-'));
  for (const n of names) writeFileSync(join(folder, `${n}.yaml`), network(n));
  const staged = (await pushManifests(folder, `${registry.host}/${repository}:staging`, { insecure: true })).manifestDigest;
  await sign(key, staged);
  expect((await pushManifests(folder, `${registry.host}/${repository}:${tag}`, { insecure: true })).manifestDigest).toBe(staged);
  return staged;
}

/** The controller's JSON log lines with this message, from `from` (a character offset) on. */
function lines(msg: string, from: number): Record<string, unknown>[] {
  return controller.jsonLines(from).filter((l) => l.msg === msg);
}

/**
 * The Sync, with this checkout's CRDs applied just before: other sessions on the shared plane
 * apply theirs (without source.oci) at any time, and the API server then refuses the field.
 */
function applySync(sync: object): void {
  for (let attempt = 1; ; attempt++) {
    kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'deploy/crds/syncs.kupenstack.io.yaml')]);
    kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repoRoot, 'deploy/crds/syncs.kupenstack.io.yaml')]);
    const r = kubectl(['apply', '-f', '-'], { input: JSON.stringify(sync) });
    if (r.status === 0) return;
    if (attempt >= 3 || !r.stderr.includes('unknown field "spec.source.oci"')) throw new Error(`kubectl apply of the Sync failed: ${r.stderr}`);
  }
}

beforeAll(async () => {
  prepareSyncBed({ system, namespaces: [ns, tenantNs], optIn, gitopsIn: ns, gitSecret });
  kubectlOk(['create', 'serviceaccount', 'gitops', '-n', tenantNs]);
  kubectlOk(['create', 'rolebinding', 'gitops-edit', '-n', tenantNs, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${tenantNs}:gitops`]);
  kubectlOk(['create', 'secret', 'generic', hookSecret, '-n', system, `--from-literal=token=${hookToken}`]);
  const port = await freePort();
  registry = await startNotifyingRegistry(`http://127.0.0.1:${port}/hooks/registry`, hookToken);
  await Promise.all([cosign('generate-key-pair', '--output-key-prefix', 'trusted'), cosign('generate-key-pair', '--output-key-prefix', 'other')]);
  kubectlOk(['create', 'secret', 'generic', keySecret, '-n', system, `--from-file=cosign.pub=${join(dir, 'trusted.pub')}`]);
  const config = join(dir, 'kupenstack.yaml');
  mkdirSync(join(dir, 'state'));
  writeFileSync(config, `stateDir: ${join(dir, 'state')}\n`);
  // As in a pod: its own ServiceAccount and deploy/rbac's ClusterRole; only this run's Sync; an hour's resync.
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), [
    '-c', config, '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '1h', '--opt-in-label', `kupenstack.io/project=${optIn}`,
    '--listen', `127.0.0.1:${port}`, '--registry-hook-secret', `${system}/${hookSecret}`, '--sync-selector', `kupenstack.io/test-run=${run}`,
    // The hook's lines are read by their fields.
    '--log-format', 'json',
  ]);
  await controller.start();
}, 600_000);

afterAll(async () => {
  kubectl(['delete', 'sync.kupenstack.io', syncName, '--wait=false']);
  kubectl(['delete', 'namespacesync.kupenstack.io', tenantSync, '-n', tenantNs, '--wait=false']);
  kubectl(['delete', 'networks.kupenstack.io', '--all', '-n', tenantNs, '--wait=false']);
  await until('the team networks to be deleted', async () => (await neutronNetworks(tenantNs)).length === 0, 120_000).catch(() => undefined);
  kubectl(['delete', 'networks.kupenstack.io', '--all', '-n', ns, '--wait=false']);
  await until('the networks to be deleted', async () => (await neutronNetworks()).length === 0, 120_000).catch(() => undefined);
  await controller?.stop();
  for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  for (const space of [ns, tenantNs]) {
    for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', space, '-o', 'name']).stdout.split('\n').filter(Boolean))
      kubectl(['patch', name, '-n', space, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'namespace', space, '--wait=false']);
    for (const n of await neutronNetworks(space)) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
    const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${space}` });
    if (p) await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
  }
  kubectl(['delete', 'secret', gitSecret, hookSecret, keySecret, '-n', system]);
  await registry?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 300_000);

describe('a Sync from an OCI artifact', () => {
  it('a folder pushed with `kupenstack push manifests` and signed with the trusted key converges: the Network reaches Neutron, the revision is the digest', async () => {
    const folder = join(dir, 'first');
    mkdirSync(folder);
    writeFileSync(join(folder, 'net1.yaml'), network('net1'));
    const { stdout } = await exec(process.execPath, ['agent/cli/main.ts', 'push', 'manifests', folder, `oci://${registry.host}/${repository}:${tag}`, '--insecure'], { cwd: repoRoot });
    const d1 = new RegExp(`^${registry.host}/${repository}@(sha256:[a-f0-9]{64})$`, 'm').exec(stdout)?.[1];
    expect(d1, stdout).toBeDefined();
    await sign('trusted', d1!);
    applySync({
        apiVersion: 'kupenstack.io/v1alpha1',
        kind: 'Sync',
        metadata: { name: syncName, labels: { 'kupenstack.io/test-run': run } },
        spec: {
          source: { oci: { url: `oci://${registry.host}/${repository}`, ref: { tag }, insecure: true, verify: { publicKey: { secretRef: { name: keySecret } } } } },
          interval: '1h', retryInterval: '2s', serviceAccountName: 'gitops', serviceAccountNamespace: ns,
        },
    });
    await until('the Sync to apply the first artifact', () => Promise.resolve(syncStatus().lastAppliedRevision === `${tag}@${d1}`), 120_000, 500).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(syncStatus())}\n${controller.log().slice(-3000)}`);
    });
    await until('net1 in Neutron with its id on the resource', async () => {
      const n = (await neutronNetworks()).find((x) => x.name === 'net1');
      return n !== undefined && crId('net1') === n.id;
    }, 180_000, 1000);
    expect(condition('Ready')?.status).toBe('True');
    expect(syncStatus().inventory?.map((e) => e.name)).toEqual(['net1']);
  }, 400_000);

  it('the tag moved to a new artifact: the registry notification runs the Sync at once (its interval is an hour) and the second network reaches Neutron', async () => {
    const from = controller.log().length;
    const d2 = await publish(['net1', 'net2'], 'trusted');
    await until('the notification to name the Sync', () => Promise.resolve(lines('registry notification: tag moved, resolving now', from).some((l) => (l.syncs as string[] | undefined)?.includes(syncName))), 60_000);
    await until('the second artifact applied', () => Promise.resolve(syncStatus().lastAppliedRevision === `${tag}@${d2}`), 60_000, 500);
    expect(crNames()).toEqual(['net1', 'net2']);
    await until('net2 in Neutron', async () => (await neutronNetworks()).some((n) => n.name === 'net2'), 180_000, 1000);
  }, 300_000);

  it('an artifact signed by another key is refused naming the reference and digest, nothing of it applied; the trusted signature then lets it apply', async () => {
    const before = syncStatus().lastAppliedRevision ?? '';
    const d2 = before.slice(`${tag}@`.length);
    const d3 = await publish(['net1', 'net2', 'net3'], 'other');
    await until('the Sync to refuse the artifact', () => Promise.resolve(condition('Ready')?.reason === 'SignatureVerificationFailed'), 60_000, 500).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(syncStatus())}`);
    });
    const ready = condition('Ready')!;
    expect(ready.status).toBe('False');
    expect(ready.message).toContain(`oci://${registry.host}/${repository}:${tag}@${d3}`);
    expect(ready.message).toMatch(/no signature verifies with the trusted key/);
    expect(condition('Stalled')).toMatchObject({ status: 'True', reason: 'SignatureVerificationFailed' });
    // Nothing of it: no resource, the applied revision unchanged, and not a byte of its content in the cache.
    expect(crNames()).toEqual(['net1', 'net2']);
    expect(syncStatus().lastAppliedRevision).toBe(before);
    expect(existsSync(join(dir, 'state', 'oci-cache', d3.replace(':', '-')))).toBe(false);
    expect(existsSync(join(dir, 'state', 'oci-cache', d2.replace(':', '-')))).toBe(true);

    // Signed by the trusted key too and pushed again (the same folder, the same digest): the notification runs it and it applies.
    expect(await publish(['net1', 'net2', 'net3'], 'trusted')).toBe(d3);
    await until('the signed artifact applied', () => Promise.resolve(syncStatus().lastAppliedRevision === `${tag}@${d3}`), 60_000, 500);
    expect(crNames()).toEqual(['net1', 'net2', 'net3']);
    expect(condition('Ready')?.status).toBe('True');
  }, 300_000);

  it("a tenant's NamespaceSync following an OCI tag is run by the same registry notification (its interval is an hour)", async () => {
    const folder = mkdtempSync(join(dir, 'team-'));
    const teamNetwork = (name: string): string => network(name).replace(`namespace: ${ns}`, `namespace: ${tenantNs}`);
    writeFileSync(join(folder, 'tn1.yaml'), teamNetwork('tn1'));
    const t1 = (await pushManifests(folder, `${registry.host}/${tenantRepository}:${tag}`, { insecure: true })).manifestDigest;
    kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'deploy/crds/namespacesyncs.kupenstack.io.yaml')]);
    kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repoRoot, 'deploy/crds/namespacesyncs.kupenstack.io.yaml')]);
    kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'kupenstack.io/v1alpha1',
        kind: 'NamespaceSync',
        metadata: { name: tenantSync, namespace: tenantNs, labels: { 'kupenstack.io/test-run': run } },
        spec: { source: { oci: { url: `oci://${registry.host}/${tenantRepository}`, ref: { tag }, insecure: true } }, interval: '1h', retryInterval: '2s', serviceAccountName: 'gitops' },
      }),
    });
    const tenantStatus = (): SyncStatus => getJson<{ status?: SyncStatus }>(['get', 'namespacesync.kupenstack.io', tenantSync, '-n', tenantNs]).status ?? {};
    await until('the NamespaceSync to apply its first artifact', () => Promise.resolve(tenantStatus().lastAppliedRevision === `${tag}@${t1}`), 120_000, 500).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(tenantStatus())}`);
    });
    const from = controller.log().length;
    writeFileSync(join(folder, 'tn2.yaml'), teamNetwork('tn2'));
    const t2 = (await pushManifests(folder, `${registry.host}/${tenantRepository}:${tag}`, { insecure: true })).manifestDigest;
    await until('the notification to name the NamespaceSync', () =>
      Promise.resolve(lines('registry notification: tag moved, resolving now', from).some((l) => (l.syncs as string[] | undefined)?.includes(`${tenantNs}/${tenantSync}`))),
    60_000);
    await until('the second team artifact applied', () => Promise.resolve(tenantStatus().lastAppliedRevision === `${tag}@${t2}`), 60_000, 500);
    await until('tn2 in Neutron', async () => (await neutronNetworks(tenantNs)).some((n) => n.name === 'tn2'), 180_000, 1000);
  }, 300_000);
});
