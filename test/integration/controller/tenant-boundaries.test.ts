import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { FaultProxy } from '../../support/fault-proxy.ts';
import { testCloudName } from '../../support/context.ts';
import { pushDiskAs, qcow2Disk } from '../kinds/image-oci-fixtures.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * Issue 26, against the real API server and the real OpenStack: what a tenant
 * (a ServiceAccount with kupenstack-edit in its namespace) cannot reach through
 * the controller. The egress policy refuses internal addresses before any
 * request (the targets' own access logs show none), an admin rule opens a
 * registry to a labelled namespace, OpenStack's admin-only fields are refused
 * at admission and by the controller, and an import of another project's
 * network is Stalled with a reason and an Event.
 */
const repoRoot = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const owner = `tb${run}`;
const prefix = 'ks-';
const optIn = `test-${run}`;
const tenantNs = `tb-${run}-tenant`;
const labNs = `tb-${run}-lab`;
const adminNs = `tb-${run}-admin`;
const lateNs = `tb-${run}-late`;
const repo = `egress-${run}/disk`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);

let controller: ControllerProcess;
let tenant: string;
let labTenant: string;
/** The internal service a tenant aims at: every request it gets is logged. */
let sink: Server;
const sinkLog: string[] = [];
/** An address the tenant namespace's rule opens, standing in for a public host: it redirects to the sink. */
let redirector: Server;
const redirectorLog: string[] = [];
/** The registry on loopback, behind a proxy that records every request (the registry's access log for this test). */
let registry: FaultProxy;
let foreignNetworkId = '';
/** Another project's shared network: every project sees it, none but its owner may adopt it. */
let sharedNetworkId = '';

interface Kobj {
  metadata: { name: string; generation?: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
}

function cr(kind: string, ns: string, name: string): Kobj | undefined {
  const r = kubectl(['get', `${kind}.kupenstack.io`, name, '-n', ns, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as Kobj) : undefined;
}

const condition = (o: Kobj | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);

function events(ns: string, name: string): { reason: string; message: string; type: string }[] {
  return getJson<{ items: { reason: string; message: string; type: string; involvedObject: { name: string } }[] }>(['get', 'events', '-n', ns]).items.filter((e) => e.involvedObject.name === name);
}

async function projectOf(ns: string): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

async function glanceImages(ns: string): Promise<{ name: string; status: string }[]> {
  const project = await projectOf(ns);
  return project ? (await cloud.forProject(project)).image.list('/images', 'images', { owner: project }) : [];
}

/** Waits for the object's Stalled condition with this reason; the controller log comes with a timeout. */
async function stalled(kind: string, ns: string, name: string, reason: string): Promise<{ message: string }> {
  await until(`${ns}/${kind}/${name} Stalled (${reason})`, () => Promise.resolve(condition(cr(kind, ns, name), 'Stalled')?.reason === reason), 120_000, 1000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\nstatus: ${JSON.stringify(cr(kind, ns, name)?.status)}\n${controller.log().slice(-3000)}`);
  });
  const o = cr(kind, ns, name)!;
  expect(condition(o, 'Stalled')!.status).toBe('True');
  expect(condition(o, 'Ready')).toMatchObject({ status: 'False', reason });
  return { message: condition(o, 'Stalled')!.message };
}

const imageYaml = (ns: string, name: string, source: string): string => `apiVersion: kupenstack.io/v1alpha1
kind: Image
metadata: {name: ${name}, namespace: ${ns}}
spec:
  diskFormat: raw
  source:
${source}
`;
const urlImage = (ns: string, name: string, url: string): string => imageYaml(ns, name, `    url: {url: "${url}"}`);
const ociImage = (ns: string, name: string): string => imageYaml(ns, name, `    oci: {repository: "${registry.address}/${repo}", tag: stable, insecure: true, sharing: private}`).replace('  diskFormat: raw\n', '');

const flavorYaml = (ns: string): string => `apiVersion: kupenstack.io/v1alpha1
kind: Flavor
metadata: {name: gpu, namespace: ${ns}}
spec:
  vcpus: 1
  ram: 256
  disk: 1
  extraSpecs: {"pci_passthrough:alias": "a1:1"}
`;

const policyName = `kupenstack-member-policy-${run}`;

function memberPolicyForRun(): string {
  const docs = parseAllDocuments(readFileSync(join(repoRoot, 'deploy/controller/member-policy.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string; metadata: { name: string }; spec: Record<string, unknown> });
  expect(docs.map((d) => d.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  const [policy, binding] = docs;
  policy!.metadata.name = policyName;
  (policy!.spec.matchConstraints as Record<string, unknown>).namespaceSelector = { matchLabels: { 'kupenstack.io/project': optIn } };
  binding!.metadata.name = policyName;
  binding!.spec.policyName = policyName;
  return docs.map((d) => JSON.stringify(d)).join('\n---\n');
}

beforeAll(async () => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'deploy/crds')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repoRoot, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repoRoot, 'deploy/rbac')]);
  // The member policy as deploy/ ships it, under this run's name and limited to this run's namespaces: the plane is shared with other tests.
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: memberPolicyForRun() });
  for (const ns of [tenantNs, labNs, adminNs]) {
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`]);
  }
  // Labels only the cluster admin can set: the lab namespace's egress rule, the tenant's one opened address, the admin namespace.
  kubectlOk(['label', 'namespace', labNs, `kupenstack.io/egress=lab-${run}`]);
  kubectlOk(['label', 'namespace', tenantNs, `kupenstack.io/egress=redirect-${run}`]);
  kubectlOk(['label', 'namespace', adminNs, 'kupenstack.io/admin=true']);
  for (const ns of [tenantNs, labNs]) {
    kubectlOk(['create', 'serviceaccount', 'tenant', '-n', ns]);
    kubectlOk(['create', 'rolebinding', 'tenant-edit', '-n', ns, '--clusterrole', 'kupenstack-edit', `--serviceaccount=${ns}:tenant`]);
  }
  tenant = serviceAccountKubeconfig(tenantNs, 'tenant');
  labTenant = serviceAccountKubeconfig(labNs, 'tenant');

  sink = createServer((req, res) => {
    sinkLog.push(`${req.method} ${req.url}`);
    res.end(Buffer.alloc(4096, 7));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  redirector = createServer((req, res) => {
    redirectorLog.push(`${req.method} ${req.url}`);
    res.writeHead(302, { location: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/secret` }).end();
  });
  await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.2', resolve));

  registry = await new FaultProxy('127.0.0.1:5050').start();
  await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());

  // Another project's private network (the admin project's), for the import test.
  const net = await cloud.client('network').post<{ network: { id: string } }>('/networks', { network: { name: `tb-${run}-private`, shared: false } }, [201]);
  foreignNetworkId = net.network.id;
  const shared = await cloud.client('network').post<{ network: { id: string } }>('/networks', { network: { name: `tb-${run}-shared`, shared: true } }, [201]);
  sharedNetworkId = shared.network.id;

  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '5s', '--opt-in-label', `kupenstack.io/project=${optIn}`, '--no-syncs', '--no-cloud-lifecycle',
    '--egress-allow', `kupenstack.io/egress=lab-${run}=>127.0.0.0/8`,
    '--egress-allow', `kupenstack.io/egress=redirect-${run}=>127.0.0.2/32`,
    '--egress-service-cidr', '10.96.0.0/16',
  ]);
  await controller.start();
}, 300_000);

afterAll(async () => {
  kubectl(['delete', 'validatingadmissionpolicybinding', policyName]);
  kubectl(['delete', 'validatingadmissionpolicy', policyName]);
  for (const ns of [tenantNs, labNs, adminNs, lateNs]) kubectl(['delete', 'namespace', ns, '--wait=false']);
  await until('the projects to be deleted', async () => (await Promise.all([tenantNs, labNs, adminNs].map(projectOf))).every((p) => p === undefined), 180_000).catch(() => undefined);
  await controller?.stop();
  for (const ns of [tenantNs, labNs, adminNs, lateNs]) {
    for (const kind of ['images', 'flavors', 'networks']) {
      const list = kubectl(['get', `${kind}.kupenstack.io`, '-n', ns, '-o', 'name']);
      for (const name of list.stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
  }
  if (foreignNetworkId) await cloud.client('network').remove(`/networks/${foreignNetworkId}`);
  if (sharedNetworkId) await cloud.client('network').remove(`/networks/${sharedNetworkId}`);
  sink?.close();
  redirector?.close();
  await registry?.stop();
}, 400_000);

describe('the egress policy, as a tenant ServiceAccount', () => {
  it('refuses internal URLs with the rule in the message, and the targets see no request', async () => {
    const sinkPort = (sink.address() as AddressInfo).port;
    const redirectPort = (redirector.address() as AddressInfo).port;
    const apiServerService = kubectlOk(['get', 'service', 'kubernetes', '-n', 'default', '-o', 'jsonpath={.spec.clusterIP}']).trim();
    expect(apiServerService).toMatch(/^10\.96\./);
    const cases: [string, string, string][] = [
      ['loopback', `http://127.0.0.1:${sinkPort}/v3`, '(rule: loopback)'],
      ['metadata', 'http://169.254.169.254/latest/meta-data/', '(rule: link-local (cloud metadata))'],
      ['apiserver', `https://${apiServerService}/version`, "(rule: the cluster's Service CIDR (--egress-service-cidr))"],
      ['localhost', `http://localhost:${sinkPort}/disk`, 'localhost resolves to'],
      ['redirect', `http://127.0.0.2:${redirectPort}/disk.raw`, '(rule: loopback)'],
    ];
    for (const [name, url] of cases) kubectlOk(['apply', '-f', '-'], { kubeconfig: tenant, input: urlImage(tenantNs, name, url) });
    for (const [name, , says] of cases) {
      const { message } = await stalled('Image', tenantNs, name, 'EgressRefused');
      expect(message, name).toContain(says);
      expect(message, name).toContain(`namespace ${tenantNs} may not fetch from there`);
      await until(`the EgressRefused Event of ${name}`, () => Promise.resolve(events(tenantNs, name).some((e) => e.reason === 'EgressRefused' && e.type === 'Warning')), 60_000);
    }
    // The internal service got nothing, not even through the redirect; the opened address answered once per attempt with a redirect.
    expect(sinkLog).toEqual([]);
    expect(redirectorLog.length).toBeGreaterThan(0);
    expect(redirectorLog.every((l) => l === 'GET /disk.raw')).toBe(true);
    // No image holds data: the refused URLs made none, the redirect's one stayed queued.
    const images = await glanceImages(tenantNs);
    expect(images.filter((i) => i.status !== 'queued')).toEqual([]);
    expect(images.map((i) => i.name).sort()).toEqual(['redirect']);
  }, 600_000);

  it('refuses an OCI repository on loopback without an admin rule: the registry sees no request', async () => {
    kubectlOk(['apply', '-f', '-'], { kubeconfig: tenant, input: ociImage(tenantNs, 'oci') });
    const { message } = await stalled('Image', tenantNs, 'oci', 'EgressRefused');
    expect(message).toContain(`${registry.address.split(':')[0]!} is in 127.0.0.0/8 (rule: loopback)`);
    expect(registry.seen).toEqual([]);
  }, 300_000);

  it('with the admin rule of its namespace label, the same registry works', async () => {
    kubectlOk(['apply', '-f', '-'], { kubeconfig: labTenant, input: ociImage(labNs, 'oci') });
    await until('the lab Image to be Ready', () => Promise.resolve(condition(cr('Image', labNs, 'oci'), 'Ready')?.status === 'True'), 300_000, 1000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${JSON.stringify(cr('Image', labNs, 'oci')?.status)}\n${controller.log().slice(-3000)}`);
    });
    expect((await glanceImages(labNs)).filter((i) => i.status === 'active').map((i) => i.name)).toEqual(['oci']);
    expect(registry.seen.filter((s) => s.path.includes(`/v2/${repo}/blobs/`)).length).toBeGreaterThan(0);
  }, 420_000);
});

describe("OpenStack's admin-only fields", () => {
  it('a tenant Flavor with pci_passthrough:alias is refused at admission with the rule', () => {
    const r = kubectl(['apply', '-f', '-'], { kubeconfig: tenant, input: flavorYaml(tenantNs) });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('[flavor.extra-specs] spec.extraSpecs: allowed only in admin namespaces');
    expect(cr('Flavor', tenantNs, 'gpu')).toBeUndefined();
  });

  it('the same Flavor in an admin namespace applies, with its extra spec in Nova', async () => {
    kubectlOk(['apply', '-f', '-'], { input: flavorYaml(adminNs) });
    await until('the admin Flavor to be Ready', () => Promise.resolve(condition(cr('Flavor', adminNs, 'gpu'), 'Ready')?.status === 'True'), 180_000, 1000);
    const compute = await cloud.adminCompute();
    const flavors = await compute.list<{ name: string; extra_specs?: Record<string, string> }>('/flavors/detail', 'flavors', { is_public: 'None' });
    expect(flavors.filter((f) => f.name === `${prefix}${adminNs}-gpu`).map((f) => f.extra_specs)).toEqual([{ 'pci_passthrough:alias': 'a1:1' }]);
  }, 300_000);

  it('the controller refuses it too where admission did not (stored while the namespace was admin): Stalled AdminOnly, an Event, nothing in Nova', async () => {
    kubectlOk(['create', 'namespace', lateNs]);
    kubectlOk(['label', 'namespace', lateNs, 'kupenstack.io/admin=true']);
    kubectlOk(['apply', '-f', '-'], { input: flavorYaml(lateNs) });
    kubectlOk(['label', 'namespace', lateNs, 'kupenstack.io/admin-']);
    kubectlOk(['label', 'namespace', lateNs, `kupenstack.io/project=${optIn}`]);
    const { message } = await stalled('Flavor', lateNs, 'gpu', 'AdminOnly');
    expect(message).toContain('[flavor.extra-specs] spec.extraSpecs: extra specs "pci_passthrough:alias" (allowed in tenant namespaces: none) is allowed only in admin namespaces');
    await until('the AdminOnly Event', () => Promise.resolve(events(lateNs, 'gpu').some((e) => e.reason === 'AdminOnly' && e.type === 'Warning')), 60_000);
    const compute = await cloud.adminCompute();
    const flavors = await compute.list<{ name: string }>('/flavors/detail', 'flavors', { is_public: 'None' });
    expect(flavors.filter((f) => f.name.endsWith(`${lateNs}-gpu`))).toEqual([]);
  }, 300_000);
});

describe('no silent refusal', () => {
  it("a tenant's import of another project's network is Stalled with a reason and an Event", async () => {
    kubectlOk(['apply', '-f', '-'], {
      kubeconfig: tenant,
      input: `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: theirs, namespace: ${tenantNs}}\nspec:\n  managementPolicy: unmanaged\n  import: {id: ${foreignNetworkId}}\n`,
    });
    const { message } = await stalled('Network', tenantNs, 'theirs', 'ImportRefused');
    // The project's member token does not see another project's private network (OpenStack's own policy); a namespace
    // without a project yet reads it with the agent's scope and is refused as import.foreign (test/integration/isolation.test.ts).
    expect(message).toContain(`import.id ${foreignNetworkId}: no Network with this id is visible to this namespace's project`);
    expect(message).toContain("another project's and not shared with it");
    await until('the ImportRefused Event', () => Promise.resolve(events(tenantNs, 'theirs').some((e) => e.reason === 'ImportRefused' && e.type === 'Warning')), 60_000);
  }, 300_000);

  it("a tenant's adoption of another project's shared network is Stalled with a reason and an Event, and Neutron's network is untouched", async () => {
    const before = await cloud.client('network').get<{ network: Record<string, unknown> }>(`/networks/${sharedNetworkId}`);
    kubectlOk(['apply', '-f', '-'], {
      kubeconfig: tenant,
      input: `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: adopted, namespace: ${tenantNs}}\nspec:\n  import: {id: ${sharedNetworkId}, adopt: true}\n  description: mine now\n`,
    });
    // Shared, so the member token sees it and may use it; adopting it would take another project's network over.
    const { message } = await stalled('Network', tenantNs, 'adopted', 'ImportRefused');
    expect(message).toContain(`the Network ${sharedNetworkId} to adopt belongs to another project`);
    await until('the ImportRefused Event of the adoption', () => Promise.resolve(events(tenantNs, 'adopted').some((e) => e.reason === 'ImportRefused' && e.type === 'Warning')), 60_000);
    const after = await cloud.client('network').get<{ network: Record<string, unknown> }>(`/networks/${sharedNetworkId}`);
    expect({ description: after.network.description, tags: after.network.tags, revision: after.network.revision_number }).toEqual({ description: before.network.description, tags: before.network.tags, revision: before.network.revision_number });
  }, 300_000);
});
