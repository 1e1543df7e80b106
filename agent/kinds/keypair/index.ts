/** The KeyPair kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { keyPair } from './adapter.ts';
export { keyPairExport } from './export.ts';
