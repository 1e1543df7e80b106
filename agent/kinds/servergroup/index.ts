/** The ServerGroup kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { serverGroup } from './adapter.ts';
export { serverGroupRules } from './rules.ts';
