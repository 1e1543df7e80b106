/** The Router kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { router } from './adapter.ts';
export { routerExport } from './export.ts';
