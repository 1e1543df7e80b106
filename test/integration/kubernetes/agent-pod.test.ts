import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { peers } from '../../support/peers.ts';
import { buildImage, type BuiltImage } from '../../testbed/image/image.ts';
import { kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';
import { onRealNode, realNode } from '../../testbed/node/peer.ts';

/*
 * The standalone agent as a real pod: `kubectl apply -k` of deploy/agent (through an overlay that
 * sets what an operator sets: namespace, image digest, the test bed's StorageClass, the real node,
 * the Git URL) with the image the test bed builds, on the real node. Its state (Git cache, create
 * journal) is on a PersistentVolume the test bed's provisioner made (test/testbed/node/provisioner.sh):
 * a push reaches Neutron, and the pod that replaces it keeps the journal and the Git cache. Read from
 * Neutron and the host.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const ns = `agent-pod-${run}`;
const owner = `agentpod${run}`;
const prefix = `ks-agentpod-${run}-`;
const tenant = 'team';
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let built: BuiltImage;
let git: TestRepo;
let overlay: string;

interface PodJson { metadata: { name: string; uid: string }; spec: { nodeName?: string; volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[] }; status: { phase: string; conditions?: { type: string; status: string }[] } }
async function pods(): Promise<PodJson[]> {
  return (JSON.parse(await kubectlOk(['-n', ns, 'get', 'pods', '-l', 'app.kubernetes.io/name=kupenstack-agent', '-o', 'json'])) as { items: PodJson[] }).items;
}
const readyPod = async (): Promise<PodJson | undefined> => (await pods()).find((p) => p.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const logs = await kubectl(['-n', ns, 'logs', 'deploy/kupenstack-agent', '--tail=30']);
  const events = await kubectl(['-n', ns, 'get', 'events', '--sort-by=.lastTimestamp']);
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}; the agent's log ends with:\n${logs.stdout}${logs.stderr}\n${events.stdout.split('\n').slice(-15).join('\n')}`);
}
async function networks(): Promise<string[]> {
  const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${tenant}` });
  return project ? (await cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project.id })).map((n) => n.name).sort() : [];
}
const network = (name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${tenant}\nspec:\n  mtu: 1400\n`;
/** The claim's volume directory on the host, as the provisioner made it. */
async function volumeDir(): Promise<string> {
  const pv = (await kubectlOk(['-n', ns, 'get', 'pvc', 'kupenstack-agent-data', '-o', 'jsonpath={.spec.volumeName}'])).trim();
  expect(pv).not.toBe('');
  return (await kubectlOk(['get', 'pv', pv, '-o', 'jsonpath={.spec.local.path}'])).trim();
}

beforeAll(async () => {
  built = buildImage({ push: true });
  git = await TestRepo.create('agent-pod');
  await git.commit({ [`tenants/${tenant}/net-a.yaml`]: network('net-a') }, 'net-a');
  git.push();
  overlay = mkdtempSync(join(tmpdir(), 'ks-agent-overlay-'));
  const config = { cloud: testCloudName, clouds: '/etc/kupenstack/cloud/clouds.yaml', owner, projectPrefix: prefix, stateDir: '/var/lib/kupenstack/state', syncs: [{ name: 'infra', source: { git: { url: git.url, ref: { branch: 'main' }, usernameFile: '/etc/kupenstack/git/username', passwordFile: '/etc/kupenstack/git/password' } }, path: 'tenants', interval: '5s', retryInterval: '5s', timeout: '5m', prune: true, webhook: { secretFile: '/etc/kupenstack/webhook/token' } }] };
  const patch = (o: unknown): { patch: string } => ({ patch: JSON.stringify(o) });
  writeFileSync(join(overlay, 'kustomization.yaml'), stringify({
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: ns,
    resources: [relative(overlay, join(repo, 'deploy/agent'))],
    images: [{ name: '127.0.0.1:5050/kupenstack/kupenstack', digest: built.digest }],
    patches: [
      patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kupenstack-config' }, data: { 'kupenstack.yaml': stringify(config) } }),
      patch({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'kupenstack-agent-data' }, spec: { storageClassName: 'kupenstack-testbed-local' } }),
      patch({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'kupenstack-agent' }, spec: { template: { spec: onRealNode } } }),
    ],
  }));
  const clouds = parse(readFileSync(join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, unknown> };
  await kubectlOk(['create', 'namespace', ns]);
  await kubectlOk(['-n', ns, 'create', 'secret', 'generic', 'kupenstack-cloud', `--from-literal=clouds.yaml=${stringify({ clouds: { [testCloudName]: clouds.clouds[testCloudName] } })}`]);
  await kubectlOk(['-n', ns, 'create', 'secret', 'generic', 'kupenstack-git', `--from-literal=username=${peers.git.user}`, `--from-literal=password=${peers.git.password}`]);
  await kubectlOk(['-n', ns, 'create', 'secret', 'generic', 'kupenstack-webhook', `--from-literal=token=${randomBytes(16).toString('hex')}`]);
  await kubectlOk(['apply', '-k', overlay]);
}, 45 * 60_000);

afterAll(async () => {
  // The agent goes first (it would recreate what is deleted under it), then what it made, read from OpenStack.
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--timeout=120s']);
  await git?.dispose();
  if (overlay) rmSync(overlay, { recursive: true, force: true });
  const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${tenant}` });
  if (project) {
    for (const n of await cloud.client('network').list<{ id: string }>('/networks', 'networks', { project_id: project.id })) await cloud.client('network').remove(`/networks/${n.id}`);
    await cloud.identity.remove(`/projects/${project.id}`);
  }
}, 300_000);

describe('the standalone agent as a real pod (kubectl apply -k deploy/agent)', () => {
  it('runs on the real node with its state on a provisioned volume; a push reaches Neutron; the replacing pod keeps its journal and Git cache', async () => {
    await until('the agent pod to be Ready', async () => (await readyPod()) !== undefined, 300_000);
    const first = (await readyPod())!;
    expect(first.spec.nodeName).toBe(realNode.name);
    expect(first.spec.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName).toBe('kupenstack-agent-data');
    await until('net-a in Neutron', async () => (await networks()).includes('net-a'), 180_000);
    // The journal is a file on the volume, on the host: the create began and ended.
    const dir = await volumeDir();
    expect(dir.startsWith(join(realNode.dir, 'volumes'))).toBe(true);
    // On the host, in the volume: the Sync's create journal and the Git cache the agent keeps.
    const journal = join(dir, 'state/syncs/infra', `${owner}.creates.jsonl`);
    await until('the create journal on the volume', () => Promise.resolve(existsSync(journal)), 60_000);
    const caches = readdirSync(join(dir, 'state/git-cache'));
    expect(caches).toHaveLength(1);
    const cache = join(dir, 'state/git-cache', caches[0]!, 'repo.git');
    const cacheIno = statSync(cache).ino;

    // Replaced (Recreate): a new pod, the same claim and volume, the journal as it was.
    await kubectlOk(['-n', ns, 'delete', 'pod', first.metadata.name, '--wait=true', '--timeout=120s']);
    await until('a new agent pod to be Ready', async () => { const p = await readyPod(); return p !== undefined && p.metadata.uid !== first.metadata.uid; }, 300_000);
    expect(await volumeDir()).toBe(dir);
    expect(existsSync(journal)).toBe(true);
    await git.commit({ [`tenants/${tenant}/net-b.yaml`]: network('net-b') }, 'net-b');
    git.push();
    await until('net-b in Neutron', async () => (await networks()).includes('net-b'), 180_000);
    // The new pod adopted nothing twice: each network once, in Neutron's own list.
    expect(await networks()).toEqual(['net-a', 'net-b']);
    // The new pod used its predecessor's state: the same journal file, the same Git cache (not cloned again).
    expect(existsSync(journal)).toBe(true);
    expect(readdirSync(join(dir, 'state/git-cache'))).toEqual(caches);
    expect(statSync(cache).ino).toBe(cacheIno);
  }, 900_000);
});
