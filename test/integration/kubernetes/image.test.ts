import { execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { peers } from '../../support/peers.ts';
import { buildImage, imageConfig, runImage, serviceAccountMount, type BuiltImage } from '../../testbed/image/image.ts';
import { builtHelm, kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/*
 * The agent's container image, built by the test bed (test/testbed/image: a
 * Debian base it makes itself, buildah, chroot isolation, vfs storage) from
 * deploy/Containerfile, pushed to the test-bed registry and pulled back by
 * digest; then its entrypoint run as in a pod of the Helm chart: the chart's
 * ServiceAccount's TokenRequest token mounted at the standard path,
 * KUBERNETES_SERVICE_HOST/PORT, clouds.yaml from a Secret. It converges a CR
 * applied with kubectl and a Sync resource's Git repository (the test bed's Git
 * server); what it made is read from Neutron. Names carry this run's suffix: the plane and the cloud are shared.
 */
const repo = join(import.meta.dirname, '../../..');
const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version: string }).version;
const run = randomBytes(3).toString('hex');
const system = `image-demo-${run}-system`;
const tenantNs = `image-demo-${run}-team`;
const release = `kupenstack-img-${run}`;
const owner = `img${run}`;
const prefix = 'ks-img-';
const optIn = `image-demo-${run}`;
// Waited for: on a fresh machine the plane is up before the same build has made helm.
const helmPath = builtHelm();
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);

let built: BuiltImage;
let buildSeconds = 0;
let controller: ChildProcess | undefined;
let controllerLog = '';
let git: TestRepo | undefined;

/** Output of a child, kept as it arrives. */
function collect(child: ChildProcess, onData: (s: string) => void): void {
  child.stdout?.on('data', (b: Buffer) => onData(b.toString('utf8')));
  child.stderr?.on('data', (b: Buffer) => onData(b.toString('utf8')));
}

function runToEnd(args: string[], opts: { entrypoint?: string } = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = runImage(undefined, args, opts);
    let out = '';
    collect(child, (s) => (out += s));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}; controller output:\n${controllerLog.slice(-4000)}`);
}

async function networksOf(ns: string): Promise<{ id: string; name: string; mtu: number }[]> {
  const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return project ? cloud.client('network').list('/networks', 'networks', { project_id: project.id }) : [];
}

// The cloud lifecycle's rights bound in this run's own namespace: the shared plane may already hold an `openstack` namespace Helm does not own.
const cloudHere = ['--set', 'cloudLifecycle.createNamespaces=false', '--set', `cloudLifecycle.namespaces={${system}}`];

beforeAll(async () => {
  const t0 = Date.now();
  built = buildImage({ push: true });
  buildSeconds = (Date.now() - t0) / 1000;
  process.stderr.write(`[image] ${built.image} ready in ${buildSeconds.toFixed(0)} s\n${built.log}`);

  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', join(repo, 'deploy/crds')]);
  await kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repo, 'deploy/crds')]);
  await kubectlOk(['create', 'namespace', system]);
  // clouds.yaml for the Secret: the test bed's own entry, as an operator would store it.
  const clouds = parse(readFileSync(join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, unknown> };
  expect(clouds.clouds[testCloudName]).toBeDefined();
  await kubectlOk(['create', 'secret', 'generic', 'kupenstack-cloud', '-n', system, `--from-literal=clouds.yaml=${stringify({ clouds: { [testCloudName]: clouds.clouds[testCloudName] } })}`]);
  // The chart's ServiceAccount and RBAC, its Deployment pointing at the pushed image by digest.
  execFileSync(helmPath, ['install', release, join(repo, 'deploy/chart/kupenstack'), '--namespace', system, `--kubeconfig=${kube.kubeconfig}`, '--skip-crds', '--set', `image.digest=${built.digest ?? ''}`, '--set', `cloud.name=${testCloudName}`, '--set', `controller.optInLabel=kupenstack.io/project=${optIn}`, '--set', 'replicas=0', ...cloudHere], { encoding: 'utf8' });
}, 45 * 60_000);

afterAll(async () => {
  if (controller?.pid && controller.exitCode === null) process.kill(-controller.pid, 'SIGKILL');
  // Whatever a failed test left: the controller's finalizers go with its objects.
  const left = await kubectl(['get', 'networks.kupenstack.io', '-n', tenantNs, '-o', 'name']);
  for (const name of left.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', tenantNs, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  await kubectl(['delete', 'namespace', tenantNs, '--wait=false']);
  try {
    execFileSync(helmPath, ['uninstall', release, '--namespace', system, `--kubeconfig=${kube.kubeconfig}`], { encoding: 'utf8' });
  } catch {
    // not installed: beforeAll failed earlier
  }
  await kubectl(['delete', 'sync.kupenstack.io', `image-demo-${run}`, '--wait=false']);
  await kubectl(['delete', 'namespace', system, '--wait=false']);
  await git?.dispose();
  for (const net of await networksOf(tenantNs)) await cloud.client('network').remove(`/networks/${net.id}`);
  const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${tenantNs}` });
  if (project) await cloud.identity.remove(`/projects/${project.id}`);
}, 300_000);

describe('the container image (deploy/Containerfile, built by test/testbed/image)', () => {
  it('is built with buildah on the test bed\'s base: entrypoint kupenstack under tini, command controller, user 65532, labelled with the version', () => {
    const { config } = imageConfig(built.image);
    expect(built.image).toBe(`127.0.0.1:5050/kupenstack/kupenstack:${version}`);
    expect(config.Entrypoint).toEqual(['/usr/bin/tini', '-s', '--', '/usr/local/bin/kupenstack']);
    expect(config.Cmd).toEqual(['controller']);
    expect(config.User).toBe('65532:65532');
    expect(config.Labels?.['org.opencontainers.image.version']).toBe(version);
    expect(config.Env).toContain('HOME=/tmp');
  });

  it('`kupenstack --version` inside prints the package version; helm and node are there, and the user cannot write outside /tmp', async () => {
    const v = await runToEnd(['--version']);
    expect(v.out.trim()).toBe(version);
    expect(v.code).toBe(0);
    // The image's own tools, as its user: what the controller runs, and what it may write.
    const tools = await runToEnd(['-c', 'id -u; node --version; helm version --short; touch /opt/kupenstack/x 2>/dev/null && echo wrote-opt || echo no-write-opt; touch /tmp/x && echo wrote-tmp'], { entrypoint: '/bin/sh' });
    expect(tools.out.trim().split('\n')).toEqual(['65532', 'v24.21.0', expect.stringMatching(/^v4\.\d+\.\d+/), 'no-write-opt', 'wrote-tmp']);
    expect(tools.code).toBe(0);
  }, 600_000);

  it('holds the web view\'s pages where --view-address serves them from: index.html and every asset it loads', async () => {
    const r = await runToEnd(['-c', 'cat /opt/kupenstack/dist/view/index.html && echo ---assets--- && ls /opt/kupenstack/dist/view/assets'], { entrypoint: '/bin/sh' });
    expect(r.code, r.out).toBe(0);
    const [html, listing] = r.out.split('---assets---');
    const loaded = [...html!.matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]!);
    expect(loaded.some((f) => f.endsWith('.js')), html).toBe(true);
    expect(listing!.trim().split('\n')).toEqual(expect.arrayContaining(loaded));
  }, 600_000);

  it('is in the test-bed registry under its tag, with the digest it was pulled back by', async () => {
    expect(built.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(built.pulled).toBe(`127.0.0.1:5050/kupenstack/kupenstack@${built.digest}`);
    const res = await fetch(`http://127.0.0.1:5050/v2/kupenstack/kupenstack/manifests/${version}`, {
      method: 'HEAD',
      headers: { Accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('docker-content-digest')).toBe(built.digest);
    // Pulled back by digest: the same image as the one built.
    expect(imageConfig(built.pulled!).id).toBe(built.id);
  });

  it('run as in the cluster (the chart\'s ServiceAccount token, in-cluster config, clouds.yaml from a Secret), it converges an opted-in namespace\'s CRs and a Sync\'s Git repository into OpenStack', async () => {
    // The Deployment of the chart names the pushed image by digest.
    const deployment = JSON.parse(await kubectlOk(['-n', system, 'get', 'deployment', `${release}-controller`, '-o', 'json'])) as { spec: { template: { spec: { serviceAccountName: string; containers: { image: string }[] } } } };
    expect(deployment.spec.template.spec.containers[0]!.image).toBe(built.pulled);
    const saDir = serviceAccountMount(system, deployment.spec.template.spec.serviceAccountName);
    // TLS is verified: the API server's serving certificate covers KUBERNETES_SERVICE_HOST (127.0.0.1) under the mounted CA.
    const authorized = await new Promise<boolean>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: 6443, ca: readFileSync(join(saDir, 'ca.crt')), rejectUnauthorized: false }, () => {
        resolve(socket.authorized);
        socket.end();
      });
      socket.on('error', reject);
    });
    expect(authorized).toBe(true);

    // Only this run's Syncs (the API server is shared); the Git cache on the writable /tmp.
    controller = runImage(saDir, ['controller', '--cloud', testCloudName, '--clouds-secret', 'kupenstack-cloud', '--owner', owner, '--project-prefix', prefix, '--opt-in-label', `kupenstack.io/project=${optIn}`, '--resync', '20s', '--sync-selector', `kupenstack.io/test-run=${run}`, '--state-dir', '/tmp/kupenstack', '--log-format', 'json']);
    collect(controller, (s) => (controllerLog += s));
    await until('the controller in the image to start', () => Promise.resolve(controllerLog.includes('controller started')), 240_000);
    // In-cluster configuration (no kubeconfig exists in the container): client-node names that cluster "inCluster".
    const apiLine = controllerLog.split('\n').flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as Record<string, unknown>] : [])).find((l) => String(l.msg).startsWith('Kubernetes API'));
    expect(apiLine, controllerLog.slice(0, 2000)).toMatchObject({ server: 'https://127.0.0.1:6443', cluster: 'inCluster', msg: 'Kubernetes API https://127.0.0.1:6443 (cluster "inCluster")' });

    await kubectlOk(['create', 'namespace', tenantNs]);
    await kubectlOk(['label', 'namespace', tenantNs, `kupenstack.io/project=${optIn}`]);
    await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name: 'from-image', namespace: tenantNs }, spec: { mtu: 1420 } }) });
    await until('the network in Neutron', async () => (await networksOf(tenantNs)).some((n) => n.name === 'from-image'), 180_000);
    const [net] = await networksOf(tenantNs);
    expect(net).toMatchObject({ name: 'from-image', mtu: 1420 });
    await until('the Network to be Ready', async () => {
      const o = JSON.parse(await kubectlOk(['get', 'networks.kupenstack.io', 'from-image', '-n', tenantNs, '-o', 'json'])) as { status?: { id?: string; conditions?: { type: string; status: string }[] } };
      return o.status?.id === net!.id && o.status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    }, 60_000);

    // A Sync resource: the test bed's Git repository → a custom resource written as the Sync's ServiceAccount (the chart's tenant role in this namespace) → Neutron.
    await kubectlOk(['create', 'serviceaccount', 'gitops', '-n', tenantNs]);
    await kubectlOk(['create', 'rolebinding', 'gitops-edit', '-n', tenantNs, '--clusterrole', `${release}-edit`, `--serviceaccount=${tenantNs}:gitops`]);
    await kubectlOk(['create', 'secret', 'generic', 'image-git', '-n', system, `--from-literal=username=${peers.git.user}`, `--from-literal=password=${peers.git.password}`]);
    git = await TestRepo.create('image-demo');
    await git.commit({ 'team/net.yaml': `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: from-git\n  namespace: ${tenantNs}\nspec:\n  mtu: 1410\n` }, 'from-git');
    git.push();
    await kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Sync', metadata: { name: `image-demo-${run}`, labels: { 'kupenstack.io/test-run': run } }, spec: { source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: 'image-git' } } }, interval: '1m', retryInterval: '5s', serviceAccountName: 'gitops', serviceAccountNamespace: tenantNs } }),
    });
    await until('the network from Git in Neutron', async () => (await networksOf(tenantNs)).some((n) => n.name === 'from-git'), 240_000);
    expect((await networksOf(tenantNs)).map((n) => [n.name, n.mtu]).sort()).toEqual([['from-git', 1410], ['from-image', 1420]]);
    const sync = JSON.parse(await kubectlOk(['get', 'sync.kupenstack.io', `image-demo-${run}`, '-o', 'json'])) as { status?: { lastAppliedRevision?: string; inventory?: unknown[] } };
    expect(sync.status?.lastAppliedRevision).toBe(`main@sha1:${git.head()}`);
    expect(sync.status?.inventory).toEqual([{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', namespace: tenantNs, name: 'from-git' }]);
    await kubectlOk(['delete', 'sync.kupenstack.io', `image-demo-${run}`]);

    // Deleted from Kubernetes → deleted from Neutron (the finalizer), by the same process.
    await kubectlOk(['delete', 'networks.kupenstack.io', 'from-image', 'from-git', '-n', tenantNs, '--wait=true', '--timeout=120s']);
    expect(await networksOf(tenantNs)).toEqual([]);
    // The namespace deleted → the project the controller made for it deleted.
    const project = async (): Promise<unknown> => (await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${tenantNs}` }))[0];
    expect(await project()).toBeDefined();
    await kubectlOk(['delete', 'namespace', tenantNs, '--wait=false']);
    await until('the Keystone project to be deleted with the namespace', async () => (await project()) === undefined, 120_000);

    // SIGTERM to run.sh (as a kubelet's to the container) reaches the controller through tini: it stops cleanly, exit 0.
    const exited = new Promise<number | null>((resolve) => controller!.once('exit', (code) => resolve(code)));
    process.kill(controller.pid!, 'SIGTERM');
    expect(await exited).toBe(0);
    expect(controllerLog).toContain('stopping');
  }, 900_000);
});
