// The objects of the ORC bench (orc.ts), the same both ways: the OpenTofu bench's 300 (apply.ts's shape) as
// KupenStack's custom resources and as ORC's. Pure: the unit tests read them without the test bed.
import { manifests, shape } from './apply.ts';

export interface Extra {
  /** Periodic drift detection: KupenStack's --resync, ORC's spec.resyncPeriod. */
  resyncSeconds?: number;
}

/** KupenStack's side: apply.ts's objects as they are (what the OpenTofu bench applies). */
export const kupenstackManifests = (ns: string, scale: number, key: string): string => manifests(ns, scale, key);

/**
 * The same objects as ORC writes them: the port's address on its subnet (so it is made after it, as ours is), the
 * flavor private (ORC has no flavor access grant; ours grants the project, one call more). Every OpenStack name is
 * prefixed by the namespace: before a create ORC looks for an object to adopt by name alone, across every project its
 * credential sees (an admin's: the whole cloud), so `net-0` would adopt another project's net-0, ours included.
 * resyncSeconds sets spec.resyncPeriod.
 */
export function orcManifests(ns: string, scale: number, key: string, extra: Extra = {}): string {
  const { nets, keys } = shape(scale);
  const resync = extra.resyncSeconds ? `  resyncPeriod: ${extra.resyncSeconds}s\n` : '';
  const h = (kind: string, name: string): string =>
    `apiVersion: openstack.k-orc.cloud/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n  cloudCredentialsRef: {cloudName: bench, secretName: orc-clouds}\n  managementPolicy: managed\n${resync}  resource:\n`;
  const docs: string[] = [];
  for (let i = 0; i < nets; i++) {
    docs.push(`${h('Network', `net-${i}`)}    name: ${ns}-net-${i}\n    mtu: 1400\n`);
    docs.push(`${h('Subnet', `sub-${i}`)}    name: ${ns}-sub-${i}\n    networkRef: net-${i}\n    ipVersion: 4\n    cidr: 10.${i}.0.0/24\n`);
    docs.push(`${h('SecurityGroup', `sg-${i}`)}    name: ${ns}-sg-${i}\n    rules:\n      - {direction: ingress, protocol: tcp, ethertype: IPv4, portRange: {min: 22, max: 22}, remoteIPPrefix: 10.0.0.0/8}\n`);
    docs.push(`${h('Port', `port-${i}`)}    name: ${ns}-port-${i}\n    networkRef: net-${i}\n    addresses: [{subnetRef: sub-${i}}]\n    securityGroupRefs: [sg-${i}]\n`);
  }
  for (let i = 0; i < keys; i++) {
    docs.push(`${h('KeyPair', `key-${i}`)}    name: ${ns}-key-${i}\n    publicKey: ${key}\n`);
    docs.push(`${h('Flavor', `flavor-${i}`)}    name: ${ns}-flavor-${i}\n    vcpus: 1\n    ram: 64\n    disk: 1\n    isPublic: false\n`);
  }
  return docs.join('---\n');
}

