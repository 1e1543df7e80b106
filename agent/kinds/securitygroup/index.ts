/**
 * The SecurityGroup kind's one face: kinds/registry.ts reads the first three;
 * the exports of Port and VirtualMachine leave the project's default group out.
 */
export { securityGroup } from './adapter.ts';
export { securityGroupRules } from './rules.ts';
export { isDefaultGroup, securityGroupExport } from './export.ts';
