/** The ApplicationCredential kind's one face (kinds/registry.ts reads it; nothing else reaches into the folder). */
export { applicationCredential } from './adapter.ts';
export { applicationCredentialRules } from './rules.ts';
