import type { KindExport } from './kit/export.ts';
import { flavorExport } from './flavor/export.ts';
import { floatingIpExport } from './floatingip/export.ts';
import { imageExport } from './image/export.ts';
import { keyPairExport } from './keypair/export.ts';
import { loadBalancerExport } from './loadbalancer/export.ts';
import { networkExport } from './network/export.ts';
import { portExport } from './port/export.ts';
import { projectQuotaExport } from './projectquota/export.ts';
import { routerExport } from './router/export.ts';
import { securityGroupExport } from './securitygroup/export.ts';
import { subnetExport } from './subnet/export.ts';
import { virtualMachineExport } from './virtualmachine/export.ts';
import { volumeExport } from './volume/export.ts';

/** The kinds `kupenstack export` writes, in the order a person reads them. */
export const kindExports: readonly KindExport[] = [
  networkExport,
  subnetExport,
  securityGroupExport,
  portExport,
  routerExport,
  floatingIpExport,
  flavorExport,
  keyPairExport,
  imageExport,
  volumeExport,
  virtualMachineExport,
  loadBalancerExport,
  projectQuotaExport,
];
