import type { KindAdapter } from './kit/adapter.ts';
import type { KindExport } from './kit/export.ts';
import type { KindRules } from './kit/rule.ts';
import { applicationCredential, applicationCredentialRules } from './applicationcredential/index.ts';
import { flavor, flavorExport } from './flavor/index.ts';
import { floatingIp, floatingIpExport } from './floatingip/index.ts';
import { image, imageExport } from './image/index.ts';
import { imageRolloutRules } from './imagerollout/index.ts';
import { keyPair, keyPairExport } from './keypair/index.ts';
import { loadBalancer, loadBalancerExport, loadBalancerRules } from './loadbalancer/index.ts';
import { network, networkExport } from './network/index.ts';
import { openStackCloudRules } from './openstackcloud/index.ts';
import { port, portExport, portRules } from './port/index.ts';
import { projectQuota, projectQuotaExport } from './projectquota/index.ts';
import { router, routerExport } from './router/index.ts';
import { securityGroup, securityGroupExport, securityGroupRules } from './securitygroup/index.ts';
import { serverGroup, serverGroupRules } from './servergroup/index.ts';
import { subnet, subnetExport, subnetRules } from './subnet/index.ts';
import { virtualMachine, virtualMachineExport, virtualMachineRules } from './virtualmachine/index.ts';
import { volume, volumeExport, volumeRules } from './volume/index.ts';
import { volumeSnapshot } from './volumesnapshot/index.ts';

/**
 * What one kind brings, each part where it has one: the engine's adapter
 * (a kind that lives in OpenStack), the validator's rules (combinations the
 * schema cannot say), `kupenstack export`'s reader of existing objects.
 */
export interface KindRow {
  kind: string;
  adapter?: KindAdapter;
  rules?: KindRules;
  export?: KindExport;
}

/** Every kind, one row each, in the engine's order (observe lists the kinds in it). The engine, the validator and export know no kind but these rows. */
export const kinds: readonly KindRow[] = [
  { kind: 'Network', adapter: network, export: networkExport },
  { kind: 'Subnet', adapter: subnet, rules: subnetRules, export: subnetExport },
  { kind: 'SecurityGroup', adapter: securityGroup, rules: securityGroupRules, export: securityGroupExport },
  { kind: 'Router', adapter: router, export: routerExport },
  { kind: 'Port', adapter: port, rules: portRules, export: portExport },
  { kind: 'FloatingIP', adapter: floatingIp, export: floatingIpExport },
  { kind: 'Flavor', adapter: flavor, export: flavorExport },
  { kind: 'KeyPair', adapter: keyPair, export: keyPairExport },
  { kind: 'ServerGroup', adapter: serverGroup, rules: serverGroupRules },
  { kind: 'Image', adapter: image, export: imageExport },
  { kind: 'Volume', adapter: volume, rules: volumeRules, export: volumeExport },
  { kind: 'VolumeSnapshot', adapter: volumeSnapshot },
  { kind: 'ProjectQuota', adapter: projectQuota, export: projectQuotaExport },
  { kind: 'ApplicationCredential', adapter: applicationCredential, rules: applicationCredentialRules },
  { kind: 'VirtualMachine', adapter: virtualMachine, rules: virtualMachineRules, export: virtualMachineExport },
  { kind: 'LoadBalancer', adapter: loadBalancer, rules: loadBalancerRules, export: loadBalancerExport },
  { kind: 'OpenStackCloud', rules: openStackCloudRules },
  { kind: 'ImageRollout', rules: imageRolloutRules },
];

/** The order `kupenstack export` writes kinds in: the order a person reads them, not the engine's. */
const exportOrder = [
  'Network',
  'Subnet',
  'SecurityGroup',
  'Port',
  'Router',
  'FloatingIP',
  'Flavor',
  'KeyPair',
  'Image',
  'Volume',
  'VirtualMachine',
  'LoadBalancer',
  'ProjectQuota',
];

/** One adapter per kind that lives in OpenStack. */
export const adapters: ReadonlyMap<string, KindAdapter> = new Map(kinds.flatMap((r) => (r.adapter ? [[r.kind, r.adapter] as const] : [])));

/** Every kind's own rules (kinds/<kind>/rules.ts). The validator runs them all and knows no kind. */
export const kindRules: readonly KindRules[] = kinds.flatMap((r) => (r.rules ? [r.rules] : []));

/** The kinds `kupenstack export` writes, in the order a person reads them. */
export const kindExports: readonly KindExport[] = exportOrder.flatMap((kind) => kinds.find((r) => r.kind === kind)?.export ?? []);
