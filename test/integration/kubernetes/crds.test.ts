import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig, serverSideApply } from '../../../agent/kube/client.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/** deploy/crds as the real kube-apiserver takes them: Established, explained, validated with readable messages, merged by SSA. */

const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const ns = `ks-crds-${randomBytes(3).toString('hex')}`;
const group = 'kupenstack.io';
const version = 'v1alpha1';

beforeAll(async () => {
  // Server-side, forced: other worktrees' test runs apply their own copy of the CRDs to the shared plane.
  await kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager=kupenstack-tests', '-f', 'deploy/crds/']);
  await core.createNamespace({ body: { metadata: { name: ns } } });
}, 120_000);
afterAll(async () => {
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
});

/** One CRD per file of deploy/crds (a new kind adds one). */
const crdFiles = readdirSync(new URL('../../../deploy/crds/', import.meta.url)).filter((f) => f.endsWith('.yaml'));
const network = (name: string, spec: Record<string, unknown>) => JSON.stringify({ apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name, namespace: ns }, spec });

describe('the CRDs in deploy/crds', () => {
  it('are all Established and accepted by the API server (structural, CEL rules within cost)', async () => {
    await kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=kupenstack']);
    const crds = JSON.parse(await kubectlOk(['get', 'crd', '-l', 'app.kubernetes.io/part-of=kupenstack', '-o', 'json'])) as {
      items: { metadata: { name: string }; status: { conditions: { type: string; status: string }[] } }[];
    };
    expect(crds.items.map((c) => `${c.metadata.name}.yaml`).sort()).toEqual([...crdFiles].sort());
    for (const c of crds.items) {
      const status = Object.fromEntries(c.status.conditions.map((x) => [x.type, x.status]));
      expect(status, c.metadata.name).toMatchObject({ Established: 'True', NamesAccepted: 'True' });
      expect(status.NonStructuralSchema, c.metadata.name).toBeUndefined();
    }
  });

  it('kubectl explain virtualmachine.spec documents the fields', async () => {
    const out = await kubectlOk(['explain', 'virtualmachine.spec']);
    for (const field of ['flavorRef', 'imageRef', 'networks', 'userDataSecretRef', 'onDelete']) expect(out).toContain(field);
    expect(out).toMatch(/DESCRIPTION:\s+\S/);
    expect(await kubectlOk(['explain', 'virtualmachine.status.powerState'])).toMatch(/running, shutoff/);
  });

  it('a CR that sets both `id` and `filter` of an import is refused with the readable CEL message', async () => {
    const r = await kubectl(['apply', '-f', '-'], { input: network('both', { import: { id: '4f6c9d0e-2d7b-4c1a-9f3e-1a2b3c4d5e6f', filter: { name: 'x' } } }) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The Network "both" is invalid: spec.import: Invalid value: set exactly one of `id` or `filter`');
    expect(r.stderr).not.toContain('must validate one and only one schema');
    const empty = await kubectl(['apply', '-f', '-'], { input: network('nofilter', { import: { filter: {} } }) });
    expect(empty.stderr).toContain('set at least one of `name`, `description` or `tags`');
    const vm = { apiVersion: `${group}/${version}`, kind: 'VirtualMachine', metadata: { name: 'two-flavors', namespace: ns }, spec: { flavorName: 'm1.tiny', flavorRef: { name: 'f' }, imageRef: { name: 'cirros' } } };
    const twoFlavors = await kubectl(['apply', '-f', '-'], { input: JSON.stringify(vm) });
    expect(twoFlavors.stderr).toContain('spec: Invalid value: set exactly one of `flavorRef` or `flavorName`');
    expect(twoFlavors.stderr).not.toContain('imageRef');
    const fine = await kubectl(['apply', '-f', '-'], { input: network('fine', { mtu: 1400 }) });
    expect(fine.stderr).toBe('');
  });

  it('status.conditions merge per type under server-side apply: two managers each keep their own condition', async () => {
    await kubectlOk(['apply', '-f', '-'], { input: network('conds', { mtu: 1450 }) });
    const condition = (type: string, reason: string) => ({ type, status: 'True', reason, message: `set by ${reason}`, lastTransitionTime: new Date().toISOString() });
    const apply = (manager: string, conditions: object[]) =>
      custom.patchNamespacedCustomObjectStatus(
        { group, version, namespace: ns, plural: 'networks', name: 'conds', fieldManager: manager, force: true, body: { apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name: 'conds' }, status: { conditions } } },
        serverSideApply,
      );
    await apply('kupenstack-controller', [condition('Ready', 'Controller')]);
    const after = (await apply('someone-else', [condition('Audited', 'Auditor')])) as { status: { conditions: { type: string; reason: string }[] } };
    expect(after.status.conditions.map((c) => `${c.type}/${c.reason}`).sort()).toEqual(['Audited/Auditor', 'Ready/Controller']);
  });

  it('tags are a set under server-side apply: two appliers share the list', async () => {
    const applyTags = (manager: string, tags: string[]) =>
      kubectlOk(['apply', '--server-side', `--field-manager=${manager}`, '-f', '-'], { input: network('tagged', { tags }) });
    await applyTags('team-one', ['one']);
    await applyTags('team-two', ['two']);
    const obj = JSON.parse(await kubectlOk(['get', 'network', 'tagged', '-n', ns, '-o', 'json'])) as { spec: { tags: string[] } };
    expect(obj.spec.tags.sort()).toEqual(['one', 'two']);
  });

  it('kubectl get ksvm shows STATUS, POWER, IP and AGE; short names never take KubeVirt’s vm', async () => {
    const vm = { apiVersion: `${group}/${version}`, kind: 'VirtualMachine', metadata: { name: 'web-1', namespace: ns }, spec: { flavorName: 'm1.tiny', imageRef: { name: 'cirros' } } };
    await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(vm) });
    await custom.patchNamespacedCustomObjectStatus(
      {
        group, version, namespace: ns, plural: 'virtualmachines', name: 'web-1', fieldManager: 'kupenstack-tests', force: true,
        body: { ...vm, status: { serverStatus: 'ACTIVE', powerState: 'running', addresses: [{ network: 'private', address: '10.0.0.5', type: 'fixed' }] } },
      },
      serverSideApply,
    );
    const [header, row] = (await kubectlOk(['get', 'ksvm', '-n', ns])).trim().split('\n').map((l) => l.trim().split(/\s+/));
    expect(header).toEqual(['NAME', 'STATUS', 'POWER', 'IP', 'READY', 'AGE']);
    expect(row?.slice(0, 4)).toEqual(['web-1', 'ACTIVE', 'running', '10.0.0.5']);
    const resources = await kubectlOk(['api-resources', `--api-group=${group}`]);
    expect(resources).toMatch(/^virtualmachines\s+ksvm\s/m);
    const rows = resources.split('\n').slice(1).filter(Boolean);
    expect(rows.length).toBeGreaterThanOrEqual(crdFiles.length);
    for (const line of rows) expect(line.split(/\s+/)[1], line).toMatch(/^ks/);
  });
});
