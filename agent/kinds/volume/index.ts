/** The Volume kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { volume } from './adapter.ts';
export { volumeRules } from './rules.ts';
export { volumeExport } from './export.ts';
