/** The VirtualMachine kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { virtualMachine } from './adapter.ts';
export { virtualMachineRules } from './rules.ts';
export { virtualMachineExport } from './export.ts';
