/** The Subnet kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { subnet } from './adapter.ts';
export { subnetRules } from './rules.ts';
export { subnetExport } from './export.ts';
