import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { ControllerProcess, kubectl, kubectlOk, prepareControllerBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * The LoadBalancer CRD on the real API server, reconciled by the controller
 * (progress by requeue: Octavia's PENDING_* is a requeue, never a held run)
 * against the test bed's real Octavia (no-op drivers: see the README).
 * `kubectl get kslb` shows the VIP Octavia reports.
 */
const run = randomBytes(3).toString('hex');
const owner = `lbc${run}`;
const ns = `lbc-${run}`;
const prefix = 'ks-';
const optIn = `test-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;

interface Kobj {
  metadata: { generation?: number };
  status?: {
    observedGeneration?: number;
    vipAddress?: string;
    provisioningStatus?: string;
    members?: { name: string; address: string; operatingStatus: string }[];
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

const lbObject = (): Kobj | undefined => {
  const r = kubectl(['get', 'loadbalancers.kupenstack.io', 'web', '-n', ns, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as Kobj) : undefined;
};
const ready = (o: Kobj | undefined): boolean => o?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation;

async function projectOf(): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

const manifests = `apiVersion: kupenstack.io/v1alpha1
kind: Network
metadata: {name: net, namespace: ${ns}}
spec: {}
---
apiVersion: kupenstack.io/v1alpha1
kind: Subnet
metadata: {name: sub, namespace: ${ns}}
spec: {networkRef: {name: net}, cidr: 10.95.0.0/24}
---
apiVersion: kupenstack.io/v1alpha1
kind: LoadBalancer
metadata: {name: web, namespace: ${ns}}
spec:
  vip: {subnetRef: {name: sub}, address: 10.95.0.50}
  listeners:
    - name: http
      protocol: HTTP
      port: 80
      pool:
        members:
          - {address: 10.95.0.11, port: 8080}
          - {address: 10.95.0.12, port: 8080}
        healthMonitor: {type: TCP, delay: 5, timeout: 3, maxRetries: 2}
`;

beforeAll(async () => {
  prepareControllerBed({ system: 'kupenstack-system', namespaces: [ns], optIn });
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
    '--cloud',
    testCloudName,
    '--owner',
    owner,
    '--project-prefix',
    prefix,
    '--resync',
    '10m',
    '--opt-in-label',
    `kupenstack.io/project=${optIn}`,
    '--no-syncs',
  ]);
  await controller.start();
}, 300_000);

afterAll(async () => {
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  try {
    await until('the namespace project to be deleted', async () => (await projectOf()) === undefined, 300_000, 2_000);
  } finally {
    await controller?.stop();
    for (const kind of ['loadbalancers', 'subnets', 'networks']) {
      const list = kubectl(['get', `${kind}.kupenstack.io`, '-n', ns, '-o', 'name']);
      for (const name of list.stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
  }
}, 600_000);

describe('LoadBalancer through the controller', () => {
  it('becomes Ready once Octavia is ACTIVE, and kubectl get shows its VIP and its members in status', async () => {
    kubectlOk(['apply', '-f', '-'], { input: manifests });
    await until('the LoadBalancer to be Ready', () => Promise.resolve(ready(lbObject())), 300_000, 1_000);

    // What Octavia itself holds, with the admin's scope.
    const project = await projectOf();
    const [lb] = await cloud.client('load-balancer').list<{ id: string; vip_address: string; provisioning_status: string }>('/lbaas/loadbalancers', 'loadbalancers', { project_id: project });
    expect(lb).toMatchObject({ vip_address: '10.95.0.50', provisioning_status: 'ACTIVE' });

    const table = kubectlOk(['get', 'kslb', '-n', ns]).trim().split('\n');
    expect(table[0]!.split(/\s+/).slice(0, 5)).toEqual(['NAME', 'VIP', 'PROVISIONING', 'OPERATING', 'READY']);
    expect(table[1]!.split(/\s+/).slice(0, 3)).toEqual(['web', '10.95.0.50', 'ACTIVE']);
    const status = lbObject()!.status!;
    expect(status.members?.map((m) => m.address).sort()).toEqual(['10.95.0.11', '10.95.0.12']);
  }, 600_000);
});
