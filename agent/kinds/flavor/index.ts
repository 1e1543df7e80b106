/** The Flavor kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { flavor } from './adapter.ts';
export { flavorExport } from './export.ts';
