import { randomBytes } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { kubeApiError } from '../../../agent/kube/errors.ts';
import { poll } from '../../../agent/util/poll.ts';
import { kube, kubectl, kubectlOk, tokenKubeconfig } from '../../testbed/kubernetes/peer.ts';

/** deploy/rbac enforced by the real API server: a tenant bound in one namespace, the controller's least privilege. */

const admin = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const core = admin.makeApiClient(CoreV1Api);
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const suffix = randomBytes(3).toString('hex');
const teamA = `team-a-${suffix}`;
const teamB = `team-b-${suffix}`;
const group = 'kupenstack.io';
const version = 'v1alpha1';
let tenant: { path: string; dispose: () => void };

beforeAll(async () => {
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', 'deploy/crds/']);
  await kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=kupenstack']);
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }),
  });
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-k', 'deploy/rbac']);
  for (const name of [teamA, teamB]) await core.createNamespace({ body: { metadata: { name } } });
  await core.createNamespacedServiceAccount({ namespace: teamA, body: { metadata: { name: 'tenant' } } });
  await rbac.createNamespacedRoleBinding({
    namespace: teamA,
    body: {
      metadata: { name: 'tenant-kupenstack-edit' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kupenstack-edit' },
      subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace: teamA }],
    },
  });
  const tr = await core.createNamespacedServiceAccountToken({ name: 'tenant', namespace: teamA, body: { spec: { audiences: [], expirationSeconds: 900 } } });
  tenant = tokenKubeconfig(tr.status!.token!, teamA);
}, 120_000);
afterAll(async () => {
  tenant?.dispose();
  for (const name of [teamA, teamB]) await core.deleteNamespace({ name }).catch(() => undefined);
});

const network = (namespace: string) => ({ apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name: 'tenant-net', namespace }, spec: { mtu: 1400 } });

describe('a tenant with kupenstack-edit bound in team-a only', () => {
  it('creates a Network in team-a and is Forbidden in team-b (the API server decides)', async () => {
    const asTenant = loadKubeConfig({ kubeconfig: tenant.path }).makeApiClient(CustomObjectsApi);
    const created = (await asTenant.createNamespacedCustomObject({ group, version, namespace: teamA, plural: 'networks', body: network(teamA) })) as { metadata: { uid: string } };
    expect(created.metadata.uid).toBeTruthy();
    const denied = await asTenant.createNamespacedCustomObject({ group, version, namespace: teamB, plural: 'networks', body: network(teamB) }).then(
      () => undefined,
      (e: unknown) => kubeApiError('create network in team-b', e),
    );
    expect(denied?.status).toBe(403);
    expect(denied?.message).toContain(`cannot create resource "networks" in API group "kupenstack.io" in the namespace "${teamB}"`);
    // Nothing was created there: the admin sees no network in team-b.
    const list = (await admin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ group, version, namespace: teamB, plural: 'networks' })) as { items: unknown[] };
    expect(list.items).toEqual([]);
  });

  it('cannot raise its own quota or write status', async () => {
    const can = async (verb: string, resource: string, ...more: string[]) =>
      (await kubectl(['auth', 'can-i', verb, resource, '-n', teamA, ...more], { kubeconfig: tenant.path })).stdout.trim();
    expect(await can('create', 'networks.kupenstack.io')).toBe('yes');
    expect(await can('get', 'projectquotas.kupenstack.io')).toBe('yes');
    expect(await can('create', 'projectquotas.kupenstack.io')).toBe('no');
    expect(await can('patch', 'networks.kupenstack.io', '--subresource=status')).toBe('no');
    expect(await can('patch', 'networks.kupenstack.io')).toBe('yes');
  });

  it('the built-in view role, bound in team-b, lets it read but not write there (aggregation)', async () => {
    await rbac.createNamespacedRoleBinding({
      namespace: teamB,
      body: {
        metadata: { name: 'tenant-view' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace: teamA }],
      },
    });
    const can = async (verb: string) => (await kubectl(['auth', 'can-i', verb, 'virtualmachines.kupenstack.io', '-n', teamB], { kubeconfig: tenant.path })).stdout.trim();
    // The clusterrole-aggregation controller (KCM) copies the rules into view asynchronously.
    await poll(async () => ((await can('list')) === 'yes' ? true : undefined), { timeoutMs: 30_000, initialDelayMs: 200, onTimeout: () => new Error('view never gained kupenstack-view rules') });
    expect(await can('create')).toBe('no');
  });
});

describe("the controller's ClusterRole", () => {
  const sa = 'system:serviceaccount:kupenstack-system:kupenstack-controller';
  const can = async (...args: string[]) => (await kubectl(['auth', 'can-i', `--as=${sa}`, ...args])).stdout.trim();

  it.each([
    [['watch', 'virtualmachines.kupenstack.io', '--all-namespaces'], 'yes'],
    [['patch', 'virtualmachines.kupenstack.io', '--subresource=status', '-n', 'team-x'], 'yes'],
    [['update', 'networks.kupenstack.io', '--subresource=finalizers', '-n', 'team-x'], 'yes'],
    [['patch', 'networks.kupenstack.io', '-n', 'team-x'], 'yes'],
    [['list', 'syncs.kupenstack.io'], 'yes'],
    [['create', 'events', '-n', 'team-x'], 'yes'],
    [['create', 'events.events.k8s.io', '-n', 'team-x'], 'yes'],
    [['watch', 'secrets', '-n', 'team-x'], 'yes'],
    [['list', 'namespaces'], 'yes'],
    [['create', 'leases.coordination.k8s.io', '-n', 'kupenstack-system'], 'yes'],
    [['create', 'leases.coordination.k8s.io', '-n', 'default'], 'no'],
    [['update', 'configmaps', '-n', 'kupenstack-system'], 'yes'],
    [['create', 'configmaps', '-n', 'team-x'], 'no'],
    [['create', 'virtualmachines.kupenstack.io', '-n', 'team-x'], 'no'],
    [['delete', 'networks.kupenstack.io', '-n', 'team-x'], 'no'],
    [['create', 'secrets', '-n', 'team-x'], 'no'],
    [['delete', 'namespaces'], 'no'],
    [['create', 'pods', '-n', 'team-x'], 'no'],
    // A Sync's writes are made as its ServiceAccount; impersonating users or groups is not granted.
    [['impersonate', 'serviceaccounts', '-n', 'team-x'], 'yes'],
    [['impersonate', 'users'], 'no'],
    [['impersonate', 'groups'], 'no'],
  ])('can-i %j → %s', async (args, expected) => {
    expect(await can(...args)).toBe(expected);
  });
});
