import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../../agent/config/config.ts';
import { SyncLoop } from '../../../agent/controller/syncs/sync-loop.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';
import { KubeSecretResolver } from '../../../agent/secrets/kubernetes.ts';
import { createLogger } from '../../../agent/telemetry/logger.ts';
import { AgentMetrics } from '../../../agent/telemetry/metrics.ts';
import { FaultProxy } from '../../support/fault-proxy.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Audit W1.3: a Sync loop demoted in the middle of a run writes nothing after.
 * The loop runs in this process against the real API server and the test
 * bed's Git server (through a proxy that holds the run's fetch), with the
 * controller's own ServiceAccount. The run is past its leadership check when
 * leadership goes (the `acting` answer a LeaderElector gives once its renew
 * deadline passed); released, it must neither apply the new revision nor write
 * the Sync's status.
 */
const run = randomBytes(3).toString('hex');
const system = 'kupenstack-system';
const ns = `sync-dm-${run}`;
const syncName = `sync-dm-${run}`;
const gitSecret = `sync-dm-${run}-git`;
const dir = mkdtempSync(join(tmpdir(), 'ks-sync-demotion-'));
let git: TestRepo;
let proxy: FaultProxy;
let loop: SyncLoop;
let leading = true;
const metrics = new AgentMetrics();

const network = (name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  mtu: 1400\n`;
const crNames = (): string[] => kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean).map((n) => n.replace(/^.*\//, '')).sort();
const syncObject = (): { metadata: { resourceVersion: string }; status?: { lastAppliedRevision?: string; conditions?: { type: string; status: string }[] } } => getJson(['get', 'sync.kupenstack.io', syncName]);
/** Runs the loop ended (a follower's skipped turn counts none). */
async function runsEnded(): Promise<number> {
  return (await metrics.reconciles.get()).values.filter((v) => v.labels.sync === syncName).reduce((n, v) => n + v.value, 0);
}

beforeAll(async () => {
  prepareSyncBed({ system, namespaces: [ns], optIn: `sync-dm-${run}`, gitopsIn: ns, gitSecret });
  git = await TestRepo.create('sync-dm');
  await git.commit({ 'net1.yaml': network('net1') }, 'net1');
  git.push();
  const url = new URL(git.url);
  proxy = await new FaultProxy(url.host).start();
  const kc = loadKubeConfig({ kubeconfig: serviceAccountKubeconfig(system, 'kupenstack-controller') });
  loop = new SyncLoop({ kc, registry: loadSchemaRegistry(), config: { ...defaultConfig, stateDir: join(dir, 'state') }, secrets: new KubeSecretResolver(kc, system), namespace: system, metrics, logger: createLogger('silent', 'json', new PassThrough()), acting: () => leading, selector: `kupenstack.io/test-run=${run}` });
  await loop.start();
  url.host = proxy.address;
  // A long interval: the test decides when a run starts (reconcile requests).
  kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Sync', metadata: { name: syncName, labels: { 'kupenstack.io/test-run': run } }, spec: { source: { git: { url: url.toString(), ref: { branch: 'main' }, secretRef: { name: gitSecret } } }, interval: '1h', retryInterval: '1h', serviceAccountName: 'gitops', serviceAccountNamespace: ns } }),
  });
}, 300_000);

afterAll(async () => {
  await loop?.stop();
  await proxy?.stop();
  kubectl(['delete', 'sync.kupenstack.io', syncName, '--wait=false']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  kubectl(['delete', 'secret', gitSecret, '-n', system]);
  await git?.dispose();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('a Sync loop demoted in the middle of a run', () => {
  it('applies nothing of the revision it fetched and writes no Sync status after losing leadership', async () => {
    const first = `main@sha1:${git.head()}`;
    await until('the leader to apply the first revision', () => Promise.resolve(syncObject().status?.lastAppliedRevision === first && crNames().join(',') === 'net1'), 120_000, 300);
    const ended = await runsEnded();
    expect(ended).toBeGreaterThan(0);

    // The next run's fetch is held by the proxy: the run is past its leadership check and in flight.
    let release = (): void => undefined;
    const seen = proxy.seen.length;
    proxy.rules = [{ path: /./, fault: { kind: 'hold', until: new Promise<void>((r) => (release = r)) }, times: 1 }];
    await git.commit({ 'net2.yaml': network('net2') }, 'net2');
    git.push();
    await loop.requestRun(syncName);
    await until('the run to fetch through the proxy', () => Promise.resolve(proxy.seen.length > seen), 60_000, 100);
    // A status write already in flight before the hold (the run's "fetching" line) lands first; what is there now is the baseline.
    await until('the Sync to say it is fetching', () => Promise.resolve(syncObject().status?.conditions?.some((c) => c.type === 'Reconciling' && c.status === 'True') === true), 30_000, 100);
    leading = false;
    const before = syncObject().metadata.resourceVersion;
    const net1 = kubectlOk(['get', 'networks.kupenstack.io', 'net1', '-n', ns, '-o', 'jsonpath={.metadata.resourceVersion}']);

    release();
    await until('the demoted run to end', async () => (await runsEnded()) > ended, 120_000, 100);
    // The fetch went through (the run saw the new revision) and then stopped short of every write.
    expect(proxy.seen.slice(seen).length).toBeGreaterThan(1);
    expect(crNames()).toEqual(['net1']);
    expect(kubectlOk(['get', 'networks.kupenstack.io', 'net1', '-n', ns, '-o', 'jsonpath={.metadata.resourceVersion}'])).toBe(net1);
    expect(syncObject().metadata.resourceVersion).toBe(before);
    expect(syncObject().status?.lastAppliedRevision).toBe(first);
  }, 300_000);
});
