/** The Network kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { network } from './adapter.ts';
export { networkExport } from './export.ts';
