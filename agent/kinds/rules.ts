import { applicationCredentialRules } from './applicationcredential/rules.ts';
import { loadBalancerRules } from './loadbalancer/rules.ts';
import { openStackCloudRules } from './openstackcloud/rules.ts';
import { portRules } from './port/rules.ts';
import type { KindRules } from './kit/rule.ts';
import { securityGroupRules } from './securitygroup/rules.ts';
import { serverGroupRules } from './servergroup/rules.ts';
import { subnetRules } from './subnet/rules.ts';
import { virtualMachineRules } from './virtualmachine/rules.ts';
import { volumeRules } from './volume/rules.ts';

/** Every kind's own rules (kinds/<kind>/rules.ts). The validator runs them all and knows no kind. */
export const kindRules: readonly KindRules[] = [
  applicationCredentialRules,
  loadBalancerRules,
  openStackCloudRules,
  portRules,
  securityGroupRules,
  serverGroupRules,
  subnetRules,
  virtualMachineRules,
  volumeRules,
];
