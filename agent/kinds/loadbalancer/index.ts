/** The LoadBalancer kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { loadBalancer } from './adapter.ts';
export { loadBalancerRules } from './rules.ts';
export { loadBalancerExport } from './export.ts';
