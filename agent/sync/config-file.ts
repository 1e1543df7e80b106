import { readConfigFile, type AgentConfig } from '../config/config.ts';
import { parseSyncs, type SyncConfig } from './settings.ts';

/** kupenstack.yaml: the engine's settings (config/config.ts) and, for `kupenstack agent`, the Syncs to keep applied. */
export interface KupenstackConfig extends AgentConfig {
  /** `kupenstack agent`: the sources to keep applied (empty for apply/plan). */
  syncs?: SyncConfig[];
}

/** Reads kupenstack.yaml (defaults without a file): its settings checked first, then its `syncs:` list, each error naming file:line:col. */
export function loadConfig(file: string | undefined): KupenstackConfig {
  const { config, syncs, at } = readConfigFile(file);
  if (syncs === undefined || at === undefined) return config;
  // Relative paths (stateDir, credential files) are relative to the working directory, as for apply.
  return { ...config, syncs: parseSyncs(syncs, { at, owner: config.owner, projectPrefix: config.projectPrefix }) };
}
