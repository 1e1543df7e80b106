// `npm run demo` (the default, in-cluster mode), after the test bed is up: the
// cloud as Kubernetes objects. KupenStack runs as real pods: the image the test
// bed builds (test/testbed/image/build.sh --push) installed with the Helm chart,
// 2 replicas with leader election, on the test bed's real node (kubelet +
// containerd, test/testbed/node), clouds.yaml from a Secret. A Sync resource
// makes the demo repository's manifests (the same Git repository and registry
// as the standalone demo) custom resources in namespaces team-a and team-b,
// then OpenStack objects; the Git server's push hook reaches the controller
// through the chart's Service. It prints `kubectl get pods` beside the cloud.
// `--foreground` (a fallback): the controller runs in this process instead, as
// in a pod (the chart's ServiceAccount token), from the image when built, else the sources.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, stringify } from 'yaml';
import { buildImage, imageIsCurrent, runImage, serviceAccountMount } from '../image/image.ts';
import { builtHelm, kube, kubectlPath, tokenKubeconfig } from '../kubernetes/peer.ts';
import { viewerObjects, viewGuide } from './view-guide.ts';
import { bold, gitPassword, gitUser, home, installPushHook, publishImage, root, say, seedRepository } from './shared.ts';

const system = 'kupenstack-demo';
const release = 'kupenstack-demo';
const cloudName = 'kupenstack-local';
const owner = 'demo-k8s';
const prefix = 'demo-k8s-';
const tenants = ['team-a', 'team-b'];
const listen = process.env.KUPENSTACK_DEMO_LISTEN ?? '127.0.0.1:9090';
const viewAddress = process.env.KUPENSTACK_DEMO_VIEW ?? '127.0.0.1:8080';
const foreground = process.argv.includes('--foreground');
// The real node's taint and label (test/testbed/node/common.sh): the pods select it.
const onRealNode = { nodeSelector: { 'kupenstack.test/real': 'true' }, tolerations: [{ key: 'kupenstack.test/real', operator: 'Equal', value: 'true', effect: 'NoSchedule' }] };
/** The chart's Service, through the API server's service proxy (the host is not on the pod network, and the test bed has no kube-proxy). */
const serviceHook = `${kube.server}/api/v1/namespaces/${system}/services/http:${release}-controller:http/proxy/hooks/demo`;
const kinds = ['networks', 'subnets', 'routers', 'securitygroups', 'keypairs', 'flavors', 'images', 'projectquotas', 'virtualmachines'].map((k) => `${k}.kupenstack.io`).join(',');

function kubectl(args: string[], input?: string): string {
  const r = spawnSync(kubectlPath, [`--kubeconfig=${kube.kubeconfig}`, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function helm(args: string[]): void {
  const r = spawnSync(builtHelm(), [...args, `--kubeconfig=${kube.kubeconfig}`], { encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr}`);
}

/**
 * The CRDs, the controller's namespace and its cloud Secret, then the chart: with `digest`, 2
 * controller pods of that image on the real node (helm waits for them Ready); without, replicas 0
 * (its ServiceAccount and RBAC only: the controller runs here, --foreground).
 */
function install(digest?: string): void {
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', join(root, 'deploy/crds')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(root, 'deploy/crds')]);
  const ns = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  const clouds = parse(readFileSync(join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, unknown> };
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'kupenstack-cloud', namespace: system }, stringData: { 'clouds.yaml': stringify({ clouds: { [cloudName]: clouds.clouds[cloudName] } }) } };
  // Pod security "restricted" enforced: the chart's pods are admitted under it.
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', '-'], [ns(system, { 'pod-security.kubernetes.io/enforce': 'restricted' }), secret].map((o) => JSON.stringify(o)).join('\n'));
  const common = ['upgrade', '--install', release, join(root, 'deploy/chart/kupenstack'), '--namespace', system, '--skip-crds', '--set', `cloud.name=${cloudName}`];
  if (!digest) {
    helm([...common, '--set', 'replicas=0']);
    say(`installed the chart as release ${release} in namespace ${system} (CRDs, RBAC, ServiceAccount kupenstack-controller; replicas 0: the controller runs here)`);
    return;
  }
  // Only the demo's Sync: tests on the same API server keep theirs.
  const args = ['--owner', owner, '--project-prefix', prefix, '--sync-selector', 'kupenstack.io/demo=true'];
  // The demo's VM image is in the test bed's registry on loopback: the egress policy opens it to every namespace (a site's rule would name its registry).
  const egressAllow = [{ cidrs: ['127.0.0.0/8'] }];
  helm([...common, '--wait', '--timeout', '10m', '--set', `image.digest=${digest}`, '--set', 'controller.resync=1m', '--set-json', `egress.allow=${JSON.stringify(egressAllow)}`,
    '--set-json', `controller.extraArgs=${JSON.stringify(args)}`, '--set-json', `nodeSelector=${JSON.stringify(onRealNode.nodeSelector)}`, '--set-json', `tolerations=${JSON.stringify(onRealNode.tolerations)}`]);
  say(`helm install: release ${release} in namespace ${system}, 2 controller pods of ${digest.slice(0, 19)}… on the real node, Ready`);
  process.stdout.write(kubectl(['get', 'pods', '-n', system, '-o', 'wide']));
}

/**
 * Who may post to the chart's Service: a ServiceAccount allowed `create` on that one Service's
 * proxy; its token goes to a root-only header file the Git server's hook hands to curl.
 */
function hookCredentials(): string {
  const objects = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'demo-git-hook', namespace: system } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'demo-git-hook', namespace: system }, rules: [{ apiGroups: [''], resources: ['services/proxy'], resourceNames: [`http:${release}-controller:http`], verbs: ['create'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'demo-git-hook', namespace: system }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'demo-git-hook' }, subjects: [{ kind: 'ServiceAccount', name: 'demo-git-hook', namespace: system }] },
  ];
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
  const token = kubectl(['create', 'token', 'demo-git-hook', '-n', system, '--duration', '720h']).trim();
  const file = join(home, 'git-hook.header');
  writeFileSync(file, `Authorization: Bearer ${token}\n`, { mode: 0o600 });
  return `--cacert '${kube.caFile}' -H @'${file}'`;
}

/** --foreground: the controller in this process's child, as in a pod of the chart. */
function startController(): ChildProcess {
  const saDir = serviceAccountMount(system, 'kupenstack-controller', { duration: '24h' });
  // Only the demo's Sync: tests on the same API server keep theirs. The Git cache in a writable place (the image's is /tmp).
  const args = ['controller', '--egress-allow', '*=>127.0.0.0/8', '--cloud', cloudName, '--clouds-secret', 'kupenstack-cloud', '--owner', owner, '--project-prefix', prefix, '--resync', '1m', '--listen', listen, '--view-address', viewAddress, '--sync-selector', 'kupenstack.io/demo=true'];
  if (imageIsCurrent()) {
    args.push('--state-dir', '/tmp/kupenstack');
    say(`running the image 127.0.0.1:5050/kupenstack/kupenstack as in a pod: ServiceAccount ${system}/kupenstack-controller (TokenRequest token at /var/run/secrets/kubernetes.io/serviceaccount), KUBERNETES_SERVICE_HOST=127.0.0.1`);
    return runImage(saDir, args, { stdio: 'inherit' });
  }
  say('the image of these sources is not built (bash test/testbed/image/build.sh builds it, ~5 min): running the controller from the sources, with the same ServiceAccount token');
  const kubeconfig = tokenKubeconfig(readFileSync(join(saDir, 'token'), 'utf8'), system).path;
  return spawn(process.execPath, [join(root, 'agent/cli/main.ts'), ...args, '--state-dir', join(home, 'controller-state'), '--kubeconfig', kubeconfig], { stdio: ['ignore', 'inherit', 'inherit'], detached: true });
}

/**
 * The Sync resource `demo` for the repository's tenants/: its ServiceAccount
 * demo-gitops may edit team-a and team-b only (the chart's tenant role), its
 * Git credentials and webhook token come from Secrets, and the Git server's
 * push hook posts to the controller's /hooks/demo (`hook.url`).
 */
function syncRepository(url: string, hook: { url: string; curlArgs?: string; who: string }): void {
  const secret = randomBytes(24).toString('hex');
  const objects: unknown[] = [
    ...tenants.map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kupenstack.io/project': 'enabled' } } })),
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'demo-gitops', namespace: system } },
    // A tenant's edit role may not set its own quota (team-a/quota.yaml): the platform team's repository may.
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'kupenstack-demo-quotas' }, rules: [{ apiGroups: ['kupenstack.io'], resources: ['projectquotas'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }] },
    ...tenants.flatMap((namespace) =>
      [`${release}-edit`, 'kupenstack-demo-quotas'].map((role) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: `demo-gitops-${role.endsWith('quotas') ? 'quotas' : 'edit'}`, namespace }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects: [{ kind: 'ServiceAccount', name: 'demo-gitops', namespace: system }] })),
    ),
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'demo-git', namespace: system }, stringData: { username: gitUser, password: gitPassword } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'demo-webhook', namespace: system }, stringData: { token: secret } },
    {
      apiVersion: 'kupenstack.io/v1alpha1',
      kind: 'Sync',
      metadata: { name: 'demo', labels: { 'kupenstack.io/demo': 'true' } },
      spec: { source: { git: { url, ref: { branch: 'main' }, secretRef: { name: 'demo-git' } } }, path: './tenants', interval: '1m', retryInterval: '10s', serviceAccountName: 'demo-gitops', serviceAccountNamespace: system, webhook: { secretRef: { name: 'demo-webhook' } } },
    },
  ];
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
  installPushHook(url, secret, hook.url, hook.who, hook.curlArgs);
  say(`Sync demo: ${url} (tenants/) → custom resources in ${tenants.join(', ')}, written as ServiceAccount ${system}/demo-gitops`);
}

interface Cr { kind: string; metadata: { name: string; namespace: string }; status?: { conditions?: { type: string; status: string; reason?: string }[] } }

/** The custom resources not Ready yet; none at all while the Sync has not applied the repository. */
function notReady(): string[] {
  const items = tenants.flatMap((ns) => (JSON.parse(kubectl(['get', kinds, '-n', ns, '-o', 'json'])) as { items: Cr[] }).items);
  if (items.length === 0) return ['the Sync to apply the repository (kubectl get sync demo)'];
  return items.filter((o) => o.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True').map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
}

/** Waits until every custom resource is Ready (or `alive` says the controller is gone): the time it took, in s. */
async function converge(alive: () => boolean): Promise<void> {
  const started = Date.now();
  let last = '';
  for (;;) {
    if (!alive()) return;
    const waiting = notReady();
    if (waiting.length === 0) {
      say(`converged in ${((Date.now() - started) / 1000).toFixed(0)} s: every custom resource is Ready`);
      return;
    }
    const line = `waiting for ${waiting.length} to be Ready: ${waiting.slice(0, 4).join(', ')}${waiting.length > 4 ? ', …' : ''}`;
    if (line !== last) say(line);
    last = line;
    await sleep(3000);
  }
}

/** The default: KupenStack as real pods, installed with Helm from the image built here. */
async function pods(url: string): Promise<void> {
  const t0 = Date.now();
  say('building the image (deploy/Containerfile, buildah) and pushing it to 127.0.0.1:5050: about 3 min the first time (159 s measured from a fresh machine: its base, then the build), seconds when the sources did not change');
  const built = buildImage({ push: true });
  say(`image ${built.pulled ?? built.image} ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  if (!built.digest) throw new Error('test/testbed/image/build.sh --push printed no digest');
  install(built.digest);
  syncRepository(url, { url: serviceHook, curlArgs: hookCredentials(), who: 'controller (through its Service)' });
  const running = (): boolean => kubectl(['get', 'pods', '-n', system, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'jsonpath={.items[*].status.phase}']).includes('Running');
  await converge(running);
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', '-'], viewerObjects(release).map((o) => JSON.stringify(o)).join('\n'));
  process.stdout.write(`\n${bold('KupenStack, as pods on the real node:')}\n${kubectl(['get', 'pods', '-n', system, '-o', 'wide'])}\n${bold('The cloud, as Kubernetes objects:')}\n${kubectl(['get', 'networks.kupenstack.io,virtualmachines.kupenstack.io', '-A'])}\n`);
  guide(`kubectl get pods -n ${system} -o wide                  # the controller: 2 replicas, one holds the Lease
  kubectl get lease -n ${system} ${release}-controller
  kubectl logs -n ${system} -l app.kubernetes.io/instance=${release} --prefix --tail=20`, `${viewGuide({ system, release })}The controller keeps running as pods: helm uninstall ${release} -n ${system} --kubeconfig ${kube.kubeconfig} removes it.`);
}

/** --foreground: the controller runs here (as in a pod), until Ctrl-C. */
async function inForeground(url: string): Promise<void> {
  install();
  const controller = startController();
  const stop = (): void => {
    // To the process only (run.sh passes it to the entrypoint; a signal to the group would end buildah first).
    if (controller.pid && controller.exitCode === null) process.kill(controller.pid, 'SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const exited = new Promise<number | null>((ok) => controller.on('exit', (code) => ok(code)));
  for (;;) {
    if (controller.exitCode !== null) break;
    if (await fetch(`http://${listen}/readyz`).then((r) => r.status === 200, () => false)) break;
    await sleep(1000);
  }
  if (controller.exitCode === null) {
    syncRepository(url, { url: `http://${listen}/hooks/demo`, who: 'controller' });
    await converge(() => controller.exitCode === null);
  }
  if (controller.exitCode === null) {
    process.stdout.write(`\n${kubectl(['get', 'networks.kupenstack.io,virtualmachines.kupenstack.io', '-A'])}\n`);
    kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', '-'], viewerObjects(release).map((o) => JSON.stringify(o)).join('\n'));
    guide('', `${viewGuide({ system, release, direct: viewAddress })}The controller keeps running here (Ctrl-C stops it).`);
  }
  process.exitCode = (await exited) ?? 0;
}

/** What to try next: the kubectl commands, `extra` first, and a git push; `last` ends it. */
function guide(extra: string, last: string): void {
  const env = `export KUBECONFIG=${kube.kubeconfig} PATH=${kube.bin}:$PATH`;
  process.stdout.write(`${bold('The cloud as Kubernetes objects:')}

  ${env}
${extra ? `  ${extra}\n` : ''}  kubectl get ${kinds} -A
  kubectl get ksvm -n team-a -o wide               # VMs: status, power, IP (what Nova reports)
  kubectl describe network.kupenstack.io -n team-a  # conditions and Events
  kubectl get namespaces -l kupenstack.io/project=enabled   # namespace = OpenStack project ${prefix}<namespace>

  kubectl get sync demo -o yaml                    # the Sync: revisions, conditions, history, inventory

${bold('Change the cloud with a git push:')}

  # git asks for the test bed's Git password: GIT_PASSWORD in test/testbed/git/common.sh (never put it in the URL: it would land in .git/config and logs)
  git clone http://${gitUser}@127.0.0.1:8180/git/demo.git ~/kupenstack-demo && cd ~/kupenstack-demo
  cat > tenants/team-b/extra-net.yaml <<'EOF'
apiVersion: kupenstack.io/v1alpha1
kind: Network
metadata:
  name: extra-net
  namespace: team-b
spec:
  description: added by a git push
EOF
  git add . && git commit -m "team-b: extra-net" && git push

  The push notifies the controller (webhook); within seconds:
  kubectl get networks.kupenstack.io -n team-b
  openstack --os-cloud ${cloudName} network list --project ${prefix}team-b
  git rm -q tenants/team-b/extra-net.yaml && git commit -m "no extra-net" && git push   # pruned: CR and network deleted

The standalone agent (no cluster): npm run demo -- --standalone
${last}
`);
}

async function main(): Promise<void> {
  mkdirSync(join(home, 'git-home'), { recursive: true });
  publishImage();
  const url = seedRepository();
  if (foreground) await inForeground(url);
  else await pods(url);
}

await main();
