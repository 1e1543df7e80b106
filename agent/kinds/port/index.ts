/** The Port kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { port } from './adapter.ts';
export { portRules } from './rules.ts';
export { portExport } from './export.ts';
