// `npm run demo` (the default, in-cluster mode), after the test bed is up: the
// cloud as Kubernetes objects. The controller runs as in a pod of the Helm
// chart — from the container image when test/testbed/image/build.sh has built
// the current sources, else from the sources — with the chart's ServiceAccount
// and clouds.yaml from a Secret; a Sync resource makes the demo repository's
// manifests (the same Git repository and registry as the standalone demo)
// custom resources in namespaces team-a and team-b, then OpenStack objects. It
// prints the kubectl commands that show them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, stringify } from 'yaml';
import { imageIsCurrent, runImage, serviceAccountMount } from '../image/image.ts';
import { kube, kubectlPath, tokenKubeconfig } from '../kubernetes/peer.ts';
import { bold, gitPassword, gitUser, home, installPushHook, publishImage, root, say, seedRepository } from './shared.ts';

const system = 'kupenstack-demo';
const release = 'kupenstack-demo';
const cloudName = 'kupenstack-local';
const owner = 'demo-k8s';
const prefix = 'demo-k8s-';
const tenants = ['team-a', 'team-b'];
const listen = process.env.KUPENSTACK_DEMO_LISTEN ?? '127.0.0.1:9090';
const kinds = ['networks', 'subnets', 'routers', 'securitygroups', 'keypairs', 'flavors', 'images', 'projectquotas', 'virtualmachines'].map((k) => `${k}.kupenstack.io`).join(',');

function kubectl(args: string[], input?: string): string {
  const r = spawnSync(kubectlPath, [`--kubeconfig=${kube.kubeconfig}`, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function helm(args: string[]): void {
  const r = spawnSync(join(kube.bin, 'helm'), [...args, `--kubeconfig=${kube.kubeconfig}`], { encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr}`);
}

/** The CRDs, the controller's namespace, its cloud Secret and the chart (its ServiceAccount and RBAC; no pods: the controller runs here). */
function install(): void {
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', join(root, 'deploy/crds')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(root, 'deploy/crds')]);
  const ns = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
  const clouds = parse(readFileSync(join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, unknown> };
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'kupenstack-cloud', namespace: system }, stringData: { 'clouds.yaml': stringify({ clouds: { [cloudName]: clouds.clouds[cloudName] } }) } };
  kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-demo', '-f', '-'], [ns(system), secret].map((o) => JSON.stringify(o)).join('\n'));
  helm(['upgrade', '--install', release, join(root, 'deploy/chart/kupenstack'), '--namespace', system, '--skip-crds', '--set', 'replicas=0', '--set', `cloud.name=${cloudName}`]);
  say(`installed the chart as release ${release} in namespace ${system} (CRDs, RBAC, ServiceAccount kupenstack-controller; replicas 0: the controller runs here)`);
}

function startController(): ChildProcess {
  const saDir = serviceAccountMount(system, 'kupenstack-controller', { duration: '24h' });
  // Only the demo's Sync: tests on the same API server keep theirs. The Git cache in a writable place (the image's is /tmp).
  const args = ['controller', '--egress-allow', '*=>127.0.0.0/8', '--cloud', cloudName, '--clouds-secret', 'kupenstack-cloud', '--owner', owner, '--project-prefix', prefix, '--resync', '1m', '--listen', listen, '--sync-selector', 'kupenstack.io/demo=true'];
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
 * push hook posts to the controller's /hooks/demo.
 */
function syncRepository(url: string): void {
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
  installPushHook(url, secret, `http://${listen}/hooks/demo`, 'controller');
  say(`Sync demo: ${url} (tenants/) → custom resources in ${tenants.join(', ')}, written as ServiceAccount ${system}/demo-gitops`);
}

interface Cr { kind: string; metadata: { name: string; namespace: string }; status?: { conditions?: { type: string; status: string; reason?: string }[] } }

/** The custom resources not Ready yet; none at all while the Sync has not applied the repository. */
function notReady(): string[] {
  const items = tenants.flatMap((ns) => (JSON.parse(kubectl(['get', kinds, '-n', ns, '-o', 'json'])) as { items: Cr[] }).items);
  if (items.length === 0) return ['the Sync to apply the repository (kubectl get sync demo)'];
  return items.filter((o) => o.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True').map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
}

async function main(): Promise<void> {
  mkdirSync(join(home, 'git-home'), { recursive: true });
  publishImage();
  const url = seedRepository();
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
    syncRepository(url);
    const started = Date.now();
    let last = '';
    for (;;) {
      if (controller.exitCode !== null) break;
      const waiting = notReady();
      if (waiting.length === 0) {
        say(`converged in ${((Date.now() - started) / 1000).toFixed(0)} s: every custom resource is Ready`);
        break;
      }
      const line = `waiting for ${waiting.length} to be Ready: ${waiting.slice(0, 4).join(', ')}${waiting.length > 4 ? ', …' : ''}`;
      if (line !== last) say(line);
      last = line;
      await sleep(3000);
    }
  }
  if (controller.exitCode === null) {
    process.stdout.write(`\n${kubectl(['get', 'networks.kupenstack.io,virtualmachines.kupenstack.io', '-A'])}\n`);
    const env = `export KUBECONFIG=${kube.kubeconfig} PATH=${kube.bin}:$PATH`;
    process.stdout.write(`${bold('The cloud as Kubernetes objects:')}

  ${env}
  kubectl get ${kinds} -A
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
The controller keeps running here (Ctrl-C stops it).
`);
  }
  process.exitCode = (await exited) ?? 0;
}

await main();
