/** The ProjectQuota kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { projectQuota } from './adapter.ts';
export { projectQuotaExport } from './export.ts';
