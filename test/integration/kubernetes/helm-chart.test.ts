import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { controllerCommand } from '../../../agent/cli/controller.ts';
import { builtHelm, kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * deploy/chart/kupenstack with the real helm and the real test-bed API server. The plane is shared:
 * the CRDs stay (Helm never deletes them), everything else lives in a namespace and under a release
 * name unique to this run.
 */

// Waited for: on a fresh machine the plane is up before the same build has made helm.
const helmPath = builtHelm();
const chart = 'deploy/chart/kupenstack';
const suffix = randomBytes(3).toString('hex');
const ns = `ks-helm-${suffix}`;
const release = `kupenstack-${suffix}`;

interface Run { code: number; stdout: string; stderr: string }
function helm(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(helmPath, [...args, `--kubeconfig=${kube.kubeconfig}`], { encoding: 'utf8', maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}
async function helmOk(args: string[]): Promise<string> {
  const r = await helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed (exit ${r.code}): ${r.stderr}`);
  return r.stdout;
}

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; resourceVersion?: string }; spec?: Record<string, unknown>; rules?: unknown[] };
const docsOf = (text: string): Obj[] => parseAllDocuments(text).map((d) => d.toJS() as Obj | null).filter((d): d is Obj => d !== null);
const fileDocs = (path: string): Obj[] => docsOf(readFileSync(path, 'utf8'));

let rendered: Obj[] = [];
let defaults: Obj[] = [];
/** The cloud's namespace is the release's here: the dry run takes objects of one namespace, and the shared plane may already have an `openstack` namespace Helm does not own. */
const cloudHere = ['--set', 'cloudLifecycle.createNamespaces=false', '--set', `cloudLifecycle.namespaces={${ns}}`];

beforeAll(async () => {
  // The CRDs must exist before the chart's custom objects can be dry-run (other tests apply the same files).
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', 'deploy/crds/']);
  // Pod security "restricted" enforced: a pod of the chart that broke it would not be admitted.
  await kubectlOk(['create', 'namespace', ns]);
  await kubectlOk(['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/warn=restricted']);
  rendered = docsOf(await helmOk(['template', release, chart, '--namespace', ns, '--include-crds', ...cloudHere]));
  defaults = docsOf(await helmOk(['template', release, chart, '--namespace', ns]));
}, 120_000);

afterAll(async () => {
  await helm(['uninstall', release, '--namespace', ns]);
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
});

describe('the Helm chart deploy/chart/kupenstack', () => {
  it('passes helm lint --strict without a warning', async () => {
    const r = await helm(['lint', '--strict', chart]);
    expect(r.stderr + r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it('refuses values its schema does not allow, naming the key', async () => {
    const r = await helm(['template', release, chart, '--set', 'leaderElection.leaseDuration=fifteen']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('leaseDuration');
    const unknown = await helm(['template', release, chart, '--set', 'replica=3']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('replica');
  });

  it('renders the CRDs of deploy/crds, the RBAC of deploy/rbac and the admission policy of deploy/controller', async () => {
    const crds = rendered.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds.map((c) => c.metadata.name).sort()).toEqual(readdirSync('deploy/crds').map((f) => f.replace(/\.yaml$/, '')).sort());
    for (const crd of crds) expect(crd).toEqual(fileDocs(`deploy/crds/${crd.metadata.name}.yaml`)[0]);
    const rules = (objs: Obj[], kind: string, nameEnd: string): unknown => objs.find((o) => o.kind === kind && o.metadata.name.endsWith(nameEnd))?.rules;
    const rbac = [...fileDocs('deploy/rbac/controller.yaml'), ...fileDocs('deploy/rbac/tenant-roles.yaml'), ...fileDocs('deploy/rbac/cloud.yaml')];
    for (const [kind, end] of [['ClusterRole', '-controller'], ['ClusterRole', '-controller-cloud'], ['ClusterRole', '-controller-credentials'], ['ClusterRole', '-edit'], ['ClusterRole', '-view'], ['Role', '-leader-election']] as const) {
      expect(rules(rendered, kind, end), `${kind} *${end}`).toEqual(rules(rbac, kind, end));
      expect(rules(rendered, kind, end)).toBeDefined();
    }
    // Two policies, each the chart's copy of its deploy/controller file (found by name: the subnet addresses, the member policy).
    const policy = (objs: Obj[], nameEnd: string): unknown => objs.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name.endsWith(nameEnd))?.spec;
    for (const [file, end] of [['validating-admission-policy.yaml', '-subnet-addresses'], ['member-policy.yaml', '-member-policy']] as const) {
      expect(policy(rendered, end), end).toEqual(policy(fileDocs(`deploy/controller/${file}`), end));
      expect(policy(rendered, end), end).toBeDefined();
    }
    expect(rendered.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata.name).sort()).toEqual([
      `${release}-controller`,
      `${release}-controller-cloud`,
      `${release}-controller-credentials`,
      `${release}-edit`,
      `${release}-view`,
    ]);
    // Writing Secrets (ApplicationCredentials) is bound only in the namespaces the admin lists, never cluster-wide and none by default.
    const credentialBindings = (objs: Obj[]): Obj[] => objs.filter((o) => (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') && (o as { roleRef?: { name: string } }).roleRef?.name.endsWith('-controller-credentials'));
    expect(credentialBindings(rendered)).toEqual([]);
    const listed = docsOf(await helmOk(['template', release, chart, '--namespace', ns, '--set', 'controller.credentialNamespaces={team-a,team-b}']));
    expect(credentialBindings(listed).map((o) => ({ kind: o.kind, name: o.metadata.name, namespace: o.metadata.namespace, roleRef: (o as { roleRef?: unknown }).roleRef, subjects: (o as { subjects?: unknown }).subjects }))).toEqual(
      ['team-a', 'team-b'].map((namespace) => ({
        kind: 'RoleBinding',
        name: `${release}-controller-credentials`,
        namespace,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${release}-controller-credentials` },
        subjects: [{ kind: 'ServiceAccount', name: 'kupenstack-controller', namespace: ns }],
      })),
    );
    const badNs = await helm(['template', release, chart, '--set', 'controller.credentialNamespaces={Team_A}']);
    expect(badNs.code).not.toBe(0);
    expect(badNs.stderr).toContain('credentialNamespaces');
    // The cloud rights are bound in the cloud's namespace only, never cluster-wide.
    expect(rendered.filter((o) => o.kind === 'RoleBinding' && o.metadata.name.endsWith('-controller-cloud')).map((o) => o.metadata.namespace)).toEqual([ns]);
    expect(rendered.filter((o) => o.kind === 'ClusterRoleBinding').map((o) => o.metadata.name)).not.toContain(`${release}-controller-cloud`);
    // By default: the namespace openstack, kept on uninstall (the cloud lives there), and the binding in it.
    expect(defaults.filter((o) => o.kind === 'RoleBinding' && o.metadata.name.endsWith('-controller-cloud')).map((o) => o.metadata.namespace)).toEqual(['openstack']);
    expect(defaults.find((o) => o.kind === 'Namespace')?.metadata).toMatchObject({ name: 'openstack', annotations: { 'helm.sh/resource-policy': 'keep' } });
    const off = docsOf(await helmOk(['template', release, chart, '--namespace', ns, '--set', 'cloudLifecycle.enabled=false']));
    expect(off.filter((o) => o.metadata.name.endsWith('-controller-cloud'))).toEqual([]);
    expect((off.find((o) => o.kind === 'Deployment')!.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec.containers[0]!.args).toContain('--no-cloud-lifecycle');
  });

  it('runs `kupenstack controller` with flags it has: 2 replicas, leader election on, restricted pod security', () => {
    const deployment = rendered.find((o) => o.kind === 'Deployment')!;
    type Pod = { serviceAccountName: string; securityContext: Record<string, unknown>; containers: { args: string[]; securityContext: Record<string, unknown> }[] };
    const spec = deployment.spec as { replicas: number; template: { spec: Pod } };
    expect(spec.replicas).toBe(2);
    const pod = spec.template.spec;
    const args = pod.containers[0]!.args;
    expect(args[0]).toBe('controller');
    expect(args).toContain('--leader-elect');
    const known = new Set(controllerCommand().options.map((o) => o.long));
    const flags = args.filter((a) => a.startsWith('--'));
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(known.has(flag), flag).toBe(true);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0]!.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(rendered.find((o) => o.kind === 'ServiceAccount')?.metadata.name).toBe(pod.serviceAccountName);
  });

  it("cloud.secretNamespace points --clouds-secret at a Secret of another namespace: the clouds.yaml an OpenStackCloud's install writes in the cloud's namespace", async () => {
    const argsOf = (objs: Obj[]): string[] => (objs.find((o) => o.kind === 'Deployment')!.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec.containers[0]!.args;
    const after = (args: string[], flag: string): string | undefined => args[args.indexOf(flag) + 1];
    expect(after(argsOf(defaults), '--clouds-secret')).toBe('kupenstack-cloud');
    const installed = docsOf(await helmOk(['template', release, chart, '--namespace', ns, '--set', 'cloud.name=openstack', '--set', 'cloud.secretNamespace=openstack', '--set', 'cloud.secretName=kupenstack-cloud-openstack-clouds-yaml']));
    expect(after(argsOf(installed), '--clouds-secret')).toBe('openstack/kupenstack-cloud-openstack-clouds-yaml');
    expect(after(argsOf(installed), '--cloud')).toBe('openstack');
    const bad = await helm(['template', release, chart, '--namespace', ns, '--set', 'cloud.secretNamespace=Open_Stack']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('secretNamespace');
  });

  it('with sharding.shards: a StatefulSet whose replicas split the shards (--shards, no --leader-elect), flags the controller has, and it passes a dry run', async () => {
    const sharded = docsOf(await helmOk(['template', release, chart, '--namespace', ns, '--set', 'sharding.shards={a,b,c}', '--set', 'sharding.defaultShard=a', '--set', 'replicas=3']));
    expect(sharded.find((o) => o.kind === 'Deployment')).toBeUndefined();
    const set = sharded.find((o) => o.kind === 'StatefulSet')!;
    const spec = set.spec as { replicas: number; serviceName: string; podManagementPolicy: string; template: { spec: { containers: { args: string[]; env: { name: string }[] }[] } } };
    expect(spec).toMatchObject({ replicas: 3, serviceName: `${release}-controller`, podManagementPolicy: 'Parallel' });
    expect(sharded.find((o) => o.kind === 'Service')?.metadata.name).toBe(spec.serviceName);
    const container = spec.template.spec.containers[0]!;
    const args = container.args;
    expect(args.slice(args.indexOf('--shards'), args.indexOf('--shards') + 4)).toEqual(['--shards', 'a,b,c', '--default-shard', 'a']);
    expect(args).not.toContain('--leader-elect');
    // The preferred shard comes from the pod name's ordinal.
    expect(container.env.map((e) => e.name)).toContain('POD_NAME');
    const known = new Set(controllerCommand().options.map((o) => o.long));
    const flags = args.filter((a) => a.startsWith('--'));
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(known.has(flag), flag).toBe(true);
    const r = await kubectl(['apply', '--dry-run=server', '--namespace', ns, '-f', '-'], { input: JSON.stringify(set) });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/violate PodSecurity/);
  });

  it('every rendered object passes a server-side dry run, with no pod security warning', async () => {
    const r = await kubectl(['apply', '--dry-run=server', '--namespace', ns, '-f', '-'], { input: rendered.map((o) => JSON.stringify(o)).join('\n') });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/violate PodSecurity/);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(rendered.length);
    for (const line of lines) expect(line).toMatch(/\(server dry run\)$/);
  });

  it('helm install creates the RBAC, Deployment, Service, NetworkPolicy and policy; the CRDs applied unchanged; helm uninstall removes all but the CRDs', async () => {
    type Crd = { metadata: { name: string; generation: number; managedFields: { manager: string }[] }; status: { conditions: { type: string; status: string }[] } };
    const crds = async (): Promise<Crd[]> => (JSON.parse(await kubectlOk(['get', 'crd', '-l', 'app.kubernetes.io/part-of=kupenstack', '-o', 'json', '--show-managed-fields'])) as { items: Crd[] }).items;
    const generations = (list: Crd[]): Record<string, number> => Object.fromEntries(list.map((c) => [c.metadata.name, c.metadata.generation]));
    const before = generations(await crds());
    expect(Object.keys(before).map((n) => `${n}.yaml`).sort()).toEqual(readdirSync(join(chart, 'crds')).filter((f) => f.endsWith('.yaml')).sort());
    // No --skip-crds: Helm 4 server-side applies the chart's CRDs (field manager "helm"); being the same as
    // deploy/crds, already on the shared plane, their spec (generation) does not move.
    // The credentials role bound in the release's own namespace (it exists; the chart never creates a tenant's).
    await helmOk(['install', release, chart, '--namespace', ns, ...cloudHere, '--set', `controller.credentialNamespaces={${ns}}`]);
    const installed = await crds();
    expect(generations(installed)).toEqual(before);
    for (const crd of installed) {
      expect(crd.metadata.managedFields.map((m) => m.manager), crd.metadata.name).toContain('helm');
      expect(crd.status.conditions.find((c) => c.type === 'Established')?.status, crd.metadata.name).toBe('True');
    }

    const deployment = JSON.parse(await kubectlOk(['-n', ns, 'get', 'deployment', `${release}-controller`, '-o', 'json'])) as { spec: { replicas: number; template: { spec: { serviceAccountName: string } } } };
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.serviceAccountName).toBe('kupenstack-controller');
    const namespaced = [['serviceaccount', 'kupenstack-controller'], ['role', `${release}-leader-election`], ['rolebinding', `${release}-leader-election`], ['rolebinding', `${release}-controller-credentials`], ['service', `${release}-controller`], ['networkpolicy', `${release}-controller`], ['deployment', `${release}-controller`]];
    const cluster = [['clusterrole', `${release}-controller`], ['clusterrolebinding', `${release}-controller`], ['clusterrole', `${release}-edit`], ['clusterrole', `${release}-view`], ['validatingadmissionpolicy', `${release}-subnet-addresses`], ['validatingadmissionpolicybinding', `${release}-subnet-addresses`], ['mutatingadmissionpolicy', `${release}-finalizer`], ['mutatingadmissionpolicybinding', `${release}-finalizer`]];
    for (const [kind, name] of namespaced) await kubectlOk(['-n', ns, 'get', kind!, name!]);
    for (const [kind, name] of cluster) await kubectlOk(['get', kind!, name!]);
    // The installed ServiceAccount may do what the controller needs (the ClusterRoleBinding took).
    const can = await kubectl(['auth', 'can-i', 'update', 'virtualmachines.kupenstack.io/status', '--all-namespaces', `--as=system:serviceaccount:${ns}:kupenstack-controller`]);
    expect(can.stdout.trim()).toBe('yes');
    const lease = await kubectl(['auth', 'can-i', 'update', 'leases.coordination.k8s.io', '-n', ns, `--as=system:serviceaccount:${ns}:kupenstack-controller`]);
    expect(lease.stdout.trim()).toBe('yes');
    // Secrets: updated (a rotation) where credentialNamespaces binds the role, nowhere else (the cloud role bound here has no update).
    const secretsIn = async (where: string): Promise<string> => (await kubectl(['auth', 'can-i', 'update', 'secrets', '-n', where, `--as=system:serviceaccount:${ns}:kupenstack-controller`])).stdout.trim();
    expect(await secretsIn(ns)).toBe('yes');
    expect(await secretsIn('default')).toBe('no');
    // The ReplicaSet's pods were admitted under pod security "restricted" (the fake node takes them).
    await expect.poll(async () => (JSON.parse(await kubectlOk(['-n', ns, 'get', 'pods', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'json'])) as { items: unknown[] }).items.length, { timeout: 60_000, interval: 1_000 }).toBe(2);

    await helmOk(['uninstall', release, '--namespace', ns, '--wait']);
    for (const [kind, name] of namespaced) expect((await kubectl(['-n', ns, 'get', kind!, name!])).stderr, `${kind} ${name}`).toMatch(/NotFound/);
    for (const [kind, name] of cluster) expect((await kubectl(['get', kind!, name!])).stderr, `${kind} ${name}`).toMatch(/NotFound/);
    expect(generations(await crds())).toEqual(before);
  });

  it("sets the controller's finalizer at create in the namespaces it reconciles (the opt-in label, controller.namespaces) and nowhere else, beside a finalizer of someone else's", async () => {
    const rel = `${release}-fin`;
    const [labelled, named, other] = ['in', 'named', 'out'].map((w) => `${ns}-fin-${w}`) as [string, string, string];
    const optIn = `kupenstack.io/project=fin-${suffix}`;
    type Net = { metadata: { finalizers?: string[] } };
    const apply = async (where: string, name: string, finalizers?: string[], dryRun = false): Promise<string[]> => {
      const doc = { apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name, namespace: where, ...(finalizers ? { finalizers } : {}) }, spec: {} };
      return (JSON.parse(await kubectlOk(['create', '-o', 'json', ...(dryRun ? ['--dry-run=server'] : []), '-f', '-'], { input: JSON.stringify(doc) })) as Net).metadata.finalizers ?? [];
    };
    await kubectlOk(['create', 'namespace', labelled]);
    await kubectlOk(['label', 'namespace', labelled, optIn]);
    for (const n of [named, other]) await kubectlOk(['create', 'namespace', n]);
    try {
      // No controller runs (replicas 0): what the objects carry is the API server's doing.
      await helmOk(['install', rel, chart, '--namespace', ns, ...cloudHere, '--set', 'replicas=0', '--set', `controller.optInLabel=${optIn}`, '--set', `controller.namespaces={${named},${labelled}}`]);
      // The API server takes a new policy up within a second or two (its informer); until then the controller patches.
      await expect.poll(() => apply(named, 'probe', undefined, true), { timeout: 30_000, interval: 500 }).toEqual(['kupenstack.io/finalizer']);
      // The answer to the create is the stored object: the finalizer was there before any watcher saw it
      // (once, in the labelled namespace that controller.namespaces names too: both bindings match it).
      expect(await apply(labelled, 'net')).toEqual(['kupenstack.io/finalizer']);
      expect(await apply(named, 'net')).toEqual(['kupenstack.io/finalizer']);
      expect(await apply(other, 'net')).toEqual([]);
      expect(await apply(labelled, 'kept', ['example.com/keep'])).toEqual(['example.com/keep', 'kupenstack.io/finalizer']);
      expect(await apply(labelled, 'twice', ['kupenstack.io/finalizer'])).toEqual(['kupenstack.io/finalizer']);
      // Only at create: an object stored without it keeps its finalizers through an update.
      await kubectlOk(['-n', other, 'label', 'networks.kupenstack.io', 'net', 'x=y']);
      expect((JSON.parse(await kubectlOk(['-n', other, 'get', 'networks.kupenstack.io', 'net', '-o', 'json'])) as Net).metadata.finalizers ?? []).toEqual([]);
      await helmOk(['uninstall', rel, '--namespace', ns, '--wait']);
      await expect.poll(() => apply(labelled, 'after', undefined, true), { timeout: 30_000, interval: 500 }).toEqual([]);
    } finally {
      await helm(['uninstall', rel, '--namespace', ns]);
      for (const n of [labelled, named, other]) {
        for (const o of (await kubectl(['-n', n, 'get', 'networks.kupenstack.io', '-o', 'name'])).stdout.split('\n').filter(Boolean)) await kubectl(['-n', n, 'patch', o, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      await kubectl(['delete', 'namespace', labelled, named, other, '--wait=false']);
    }
  });

  it('by default creates a cloud namespace that is missing, keeps it through upgrade and uninstall, and leaves one that exists alone', async () => {
    const rel = `${release}-ns`;
    const existing = `${ns}-old`;
    const missing = `${ns}-new`;
    type Ns = { metadata: { annotations?: Record<string, string> } };
    const annotations = async (name: string): Promise<Record<string, string>> => (JSON.parse(await kubectlOk(['get', 'namespace', name, '-o', 'json'])) as Ns).metadata.annotations ?? {};
    await kubectlOk(['create', 'namespace', existing]);
    try {
      // What an operator who installed OpenStack-Helm first has: before the lookup, this install failed ("exists and cannot be imported").
      const values = ['--set', `cloudLifecycle.namespaces={${existing},${missing}}`];
      await helmOk(['install', rel, chart, '--namespace', ns, ...values]);
      expect(await annotations(missing)).toMatchObject({ 'meta.helm.sh/release-name': rel, 'helm.sh/resource-policy': 'keep' });
      expect(Object.keys(await annotations(existing)).filter((k) => k.startsWith('meta.helm.sh/'))).toEqual([]);
      for (const where of [existing, missing]) await kubectlOk(['-n', where, 'get', 'rolebinding', `${rel}-controller-cloud`]);
      // The namespace it made is found by the lookup on upgrade and still rendered: the upgrade must not drop it.
      await helmOk(['upgrade', rel, chart, '--namespace', ns, ...values]);
      const manifest = docsOf(await helmOk(['get', 'manifest', rel, '--namespace', ns]));
      expect(manifest.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name)).toEqual([missing]);
      await helmOk(['uninstall', rel, '--namespace', ns, '--wait']);
      expect(await annotations(missing)).toMatchObject({ 'helm.sh/resource-policy': 'keep' });
      await kubectlOk(['get', 'namespace', existing]);
    } finally {
      await helm(['uninstall', rel, '--namespace', ns]);
      await kubectl(['delete', 'namespace', existing, missing, '--wait=false']);
    }
  });
});
