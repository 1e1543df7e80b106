import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { issueToken as issue, type CloudEntry } from '../../support/appcred.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * ApplicationCredential in the cluster (issue 32 item 4): the controller, as its own
 * ServiceAccount with deploy/rbac, writes the credential into a Kubernetes Secret only where
 * the ClusterRole kupenstack-controller-credentials is bound; the Secret's clouds.yaml
 * authenticates to the real Keystone; status, Events and the log never hold the secret; deleting
 * the resource deletes the credential and the Secret KupenStack made.
 */
const run = randomBytes(3).toString('hex');
const owner = `ac${run}`;
const ns = `ac-${run}`;
const prefix = 'ks-';
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;

interface Cr {
  status?: { id?: string; secretName?: string; userId?: string; conditions?: { type: string; status: string; reason: string; message: string }[] } & Record<string, unknown>;
}
const cr = (): Cr => getJson<Cr>(['get', 'applicationcredentials.kupenstack.io', 'app', '-n', ns]);
const ready = (c: Cr) => c.status?.conditions?.find((x) => x.type === 'Ready');

/** The clouds.yaml entry a Secret holds, as a pod mounting it reads it. */
function cloudEntry(name: string): CloudEntry {
  const data = getJson<{ data: Record<string, string> }>(['get', 'secret', name, '-n', ns]).data;
  return (parse(Buffer.from(data['clouds.yaml']!, 'base64').toString('utf8')) as { clouds: { openstack: CloudEntry } }).clouds.openstack;
}

async function serviceUsers(): Promise<{ id: string }[]> {
  return cloud.identity.list<{ id: string }>('/users', 'users', { name__startswith: `kupenstack.${owner}.${prefix}${ns}.` });
}

beforeAll(async () => {
  prepareControllerBed({ system: 'kupenstack-system', namespaces: [ns], optIn: run });
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '3s', '--opt-in-label', `kupenstack.io/project=${run}`, '--no-syncs',
  ]);
  await controller.start();
}, 300_000);

afterAll(async () => {
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  try {
    await until('the namespace project to be deleted', async () => (await cloud.identity.list('/projects', 'projects', { name: `${prefix}${ns}` })).length === 0, 180_000, 1_000);
  } finally {
    await controller?.stop();
    for (const name of ['app', 'other', 'minter']) kubectl(['patch', 'applicationcredentials.kupenstack.io', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  }
}, 300_000);

describe('ApplicationCredential in the cluster', () => {
  it('is written to a Secret only where the credentials role is bound; the Secret authenticates; the secret stays out of status, Events and the log; delete removes both', async () => {
    kubectlOk(['apply', '-f', '-'], {
      input: `apiVersion: kupenstack.io/v1alpha1\nkind: ApplicationCredential\nmetadata: {name: app, namespace: ${ns}}\nspec: {roles: [member], secretRef: {name: app-cloud}}\n`,
    });
    // Not bound yet: the controller may not write Secrets here, and says which binding to make.
    await until('the Forbidden to be reported', () => Promise.resolve(/kupenstack-controller-credentials/.test(ready(cr())?.message ?? '')), 120_000);
    expect(ready(cr())?.status).toBe('False');

    kubectlOk(['create', 'rolebinding', 'kupenstack-credentials', '-n', ns, '--clusterrole', 'kupenstack-controller-credentials', '--serviceaccount', 'kupenstack-system:kupenstack-controller']);
    await until('the credential to be Ready', () => Promise.resolve(ready(cr())?.status === 'True'), 120_000);

    const secret = getJson<{ metadata: { labels?: Record<string, string> }; data: Record<string, string> }>(['get', 'secret', 'app-cloud', '-n', ns]);
    expect(secret.metadata.labels?.['kupenstack.io/owner']).toBe(owner);
    const entry = cloudEntry('app-cloud');
    expect(entry.auth.application_credential_id).toBe(Buffer.from(secret.data.application_credential_id!, 'base64').toString('utf8'));
    expect((await issue(entry)).status).toBe(201);
    const status = cr().status!;
    expect(status).toMatchObject({ id: entry.auth.application_credential_id, secretName: 'app-cloud' });

    const events = kubectlOk(['get', 'events', '-n', ns, '-o', 'json']);
    const seen = [JSON.stringify(status), events, controller.log()].join('\n');
    expect(seen.includes(entry.auth.application_credential_secret), 'the secret reached status, an Event or the log').toBe(false);

    // secretRef changed: the new Secret receives a new credential that authenticates, then the Secret KupenStack made under the old name goes.
    kubectlOk(['patch', 'applicationcredentials.kupenstack.io', 'app', '-n', ns, '--type=merge', '-p', '{"spec":{"secretRef":{"name":"app-cloud-2"}}}']);
    await until('the old Secret to be deleted', () => Promise.resolve(kubectl(['get', 'secret', 'app-cloud', '-n', ns]).status !== 0), 120_000);
    const moved = cloudEntry('app-cloud-2');
    expect(moved.auth.application_credential_id).not.toBe(entry.auth.application_credential_id);
    expect((await issue(moved)).status).toBe(201);
    await until('the status to name the new Secret', () => Promise.resolve(cr().status?.secretName === 'app-cloud-2' && cr().status?.id === moved.auth.application_credential_id), 120_000);

    kubectlOk(['delete', 'applicationcredentials.kupenstack.io', 'app', '-n', ns, '--timeout=120s']);
    expect(kubectl(['get', 'secret', 'app-cloud-2', '-n', ns]).status).not.toBe(0);
    expect(await serviceUsers()).toEqual([]);
  }, 300_000);

  it('a Secret KupenStack did not make is written only once it is annotated kupenstack.io/accept-credentials=true, keeps its other keys and outlives the resource', async () => {
    // A tenant who may write ApplicationCredentials but not this Secret must not have the controller overwrite it.
    kubectlOk(['create', 'secret', 'generic', 'theirs', '-n', ns, '--from-literal=keep=kept']);
    kubectlOk(['apply', '-f', '-'], {
      input: `apiVersion: kupenstack.io/v1alpha1\nkind: ApplicationCredential\nmetadata: {name: other, namespace: ${ns}}\nspec: {roles: [member], secretRef: {name: theirs}}\n`,
    });
    const other = (): Cr => getJson<Cr>(['get', 'applicationcredentials.kupenstack.io', 'other', '-n', ns]);
    await until('the refusal to be reported', () => Promise.resolve(/did not make it.*kupenstack\.io\/accept-credentials=true/.test(ready(other())?.message ?? '')), 120_000);
    expect(ready(other())?.status).toBe('False');
    // Refused before anything is made in Keystone.
    expect(await serviceUsers()).toEqual([]);
    const data = (): Record<string, string> => getJson<{ data: Record<string, string> }>(['get', 'secret', 'theirs', '-n', ns]).data;
    expect(Object.keys(data())).toEqual(['keep']);

    kubectlOk(['annotate', 'secret', 'theirs', '-n', ns, 'kupenstack.io/accept-credentials=true']);
    await until('the credential to be Ready', () => Promise.resolve(ready(other())?.status === 'True'), 120_000);
    expect(Buffer.from(data().keep!, 'base64').toString('utf8')).toBe('kept');
    expect(Object.keys(data())).toContain('application_credential_id');
    // Moved to a Secret of its own: the opted-in Secret is never deleted, though it holds an older credential of this resource.
    kubectlOk(['patch', 'applicationcredentials.kupenstack.io', 'other', '-n', ns, '--type=merge', '-p', '{"spec":{"secretRef":{"name":"other-cloud"}}}']);
    await until('the new Secret to hold a credential that works', async () => kubectl(['get', 'secret', 'other-cloud', '-n', ns]).status === 0 && (await issue(cloudEntry('other-cloud'))).status === 201, 120_000);
    await until('the status to name the new Secret', () => Promise.resolve(other().status?.secretName === 'other-cloud' && ready(other())?.status === 'True'), 120_000);
    expect(Buffer.from(data().keep!, 'base64').toString('utf8')).toBe('kept');
    kubectlOk(['delete', 'applicationcredentials.kupenstack.io', 'other', '-n', ns, '--timeout=120s']);
    expect(kubectl(['get', 'secret', 'theirs', '-n', ns]).status).toBe(0);
    expect(await serviceUsers()).toEqual([]);
  }, 300_000);

  it('unrestricted: true is refused in a tenant namespace (Stalled AdminOnly, nothing in Keystone) and made, unrestricted in Keystone, once the namespace is an admin namespace; a Secret it made and an operator opted in outlives it', async () => {
    kubectlOk(['apply', '-f', '-'], {
      input: `apiVersion: kupenstack.io/v1alpha1\nkind: ApplicationCredential\nmetadata: {name: minter, namespace: ${ns}}\nspec: {roles: [member], secretRef: {name: minter-cloud}, unrestricted: true}\n`,
    });
    const minter = (): Cr => getJson<Cr>(['get', 'applicationcredentials.kupenstack.io', 'minter', '-n', ns]);
    const stalled = (c: Cr) => c.status?.conditions?.find((x) => x.type === 'Stalled');
    await until('the member policy to refuse it', () => Promise.resolve(stalled(minter())?.reason === 'AdminOnly'), 120_000);
    expect(stalled(minter())?.message).toContain('[applicationcredential.unrestricted] spec.unrestricted: unrestricted: true is allowed only in admin namespaces');
    expect(await serviceUsers()).toEqual([]);

    // Only the cluster admin can label a namespace (a cluster-scoped object).
    kubectlOk(['label', 'namespace', ns, 'kupenstack.io/admin=true']);
    await until('the credential to be Ready', () => Promise.resolve(ready(minter())?.status === 'True'), 120_000);
    const entry = cloudEntry('minter-cloud');
    const [user] = await serviceUsers();
    const cred = await cloud.identity.get<{ application_credential: { unrestricted?: boolean } }>(`/users/${user!.id}/application_credentials/${entry.auth.application_credential_id}`);
    expect(cred.application_credential.unrestricted).toBe(true);
    expect((await issue(entry)).status).toBe(201);

    // A Secret KupenStack made that an operator then opted in (kept for its own keys) is no longer KupenStack's to delete.
    kubectlOk(['annotate', 'secret', 'minter-cloud', '-n', ns, 'kupenstack.io/accept-credentials=true']);
    kubectlOk(['patch', 'applicationcredentials.kupenstack.io', 'minter', '-n', ns, '--type=merge', '-p', '{"spec":{"secretRef":{"name":"minter-cloud-2"}}}']);
    await until('the status to name the new Secret', () => Promise.resolve(minter().status?.secretName === 'minter-cloud-2' && ready(minter())?.status === 'True'), 120_000);
    expect((await issue(cloudEntry('minter-cloud-2'))).status).toBe(201);
    kubectlOk(['delete', 'applicationcredentials.kupenstack.io', 'minter', '-n', ns, '--timeout=120s']);
    expect(kubectl(['get', 'secret', 'minter-cloud-2', '-n', ns]).status).not.toBe(0);
    expect(kubectl(['get', 'secret', 'minter-cloud', '-n', ns]).status).toBe(0);
    kubectlOk(['label', 'namespace', ns, 'kupenstack.io/admin-']);
    expect(await serviceUsers()).toEqual([]);
  }, 300_000);
});
