/** The FloatingIP kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { floatingIp } from './adapter.ts';
export { floatingIpExport } from './export.ts';
