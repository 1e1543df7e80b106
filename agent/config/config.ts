import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { isDnsLabel } from '../util/dns-label.ts';
import { ConfigError } from './config-error.ts';
import { locator, type Locate } from './locate.ts';
import type { ImageVerify } from '../model/kinds.generated.ts';

/**
 * The engine's settings from `kupenstack.yaml`: where the cloud is and how the agent names and owns
 * things. The file's `syncs:` list is the Sync kit's (sync/settings.ts, read with sync/config-file.ts).
 */
export interface AgentConfig {
  /** clouds.yaml entry to use. */
  cloud?: string;
  /** clouds.yaml location; default: openstacksdk's search path. */
  clouds?: string;
  /** This KupenStack instance's identity in ownership markers. */
  owner: string;
  /** Keystone project name = projectPrefix + namespace. */
  projectPrefix: string;
  domain: string;
  /** Role the agent's user takes in each project. */
  role: string;
  concurrency: number;
  /** Percent of the owned objects one revision may delete before it is held. */
  massDeleteThreshold: number;
  /** Where standalone runs keep heal attempts and history. */
  stateDir: string;
  readyTimeoutSeconds: number;
  /**
   * Standalone Secrets, laid out like mounted Secret volumes:
   * `<secretsDir>/<namespace>/<name>/<key>` (manifests' credentialsSecretRef,
   * userDataSecretRef; a Sync's secretRef). Default: `<stateDir>/secrets`.
   */
  secretsDir?: string;
  /** The running Sync's default signature policy of OCI Images (SyncConfig.imageVerify). */
  imageVerify?: ImageVerify;
}

/** kupenstack.yaml as read here: the engine's settings checked, and the `syncs:` list as written, for the Sync kit to parse where `at` says. */
export interface ConfigFile {
  config: AgentConfig;
  syncs?: unknown;
  at?: Locate;
}

export const defaultConfig: AgentConfig = {
  owner: 'kupenstack',
  projectPrefix: 'ks-',
  domain: 'default',
  role: 'member',
  concurrency: 8,
  massDeleteThreshold: 50,
  stateDir: '.kupenstack',
  readyTimeoutSeconds: 300,
};

/** Settings that are strings and have no default value. */
const optionalStrings = ['cloud', 'clouds', 'secretsDir'];
const scalarKeys = [...optionalStrings.slice(0, 2), ...Object.keys(defaultConfig), optionalStrings[2]!];

/** Where the standalone resolver reads `{name, namespace, key}` Secrets. */
export function secretsDirOf(config: AgentConfig): string {
  return config.secretsDir ?? join(config.stateDir, 'secrets');
}

export function readConfigFile(file: string | undefined): ConfigFile {
  if (!file) return { config: { ...defaultConfig } };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`, { cause: err });
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const { line, col } = lines.linePos(e.pos[0]);
    throw new ConfigError(`${file}:${line}:${col}: ${e.message.split('\n')[0]}`);
  }
  const raw: unknown = doc.toJS();
  if (raw === null || raw === undefined) return { config: { ...defaultConfig } };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${file}: expected a mapping of settings`);
  const at = locator(file, doc, lines);
  const config: AgentConfig = { ...defaultConfig };
  let syncs: unknown;
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (key === 'syncs') {
      syncs = value;
      continue;
    }
    if (!scalarKeys.includes(key)) throw new ConfigError(`${at([key])}: unknown setting "${key}"; known: ${scalarKeys.join(', ')}, syncs`);
    const expected = optionalStrings.includes(key) ? 'string' : typeof defaultConfig[key as keyof AgentConfig];
    if (typeof value !== expected) throw new ConfigError(`${at([key])}: "${key}" must be a ${expected}`);
    (config as unknown as Record<string, unknown>)[key] = value;
  }
  checkConfig(config, file);
  return { config, ...(syncs !== undefined ? { syncs, at } : {}) };
}

function checkConfig(config: AgentConfig, where = 'configuration'): AgentConfig {
  if (!isDnsLabel(config.owner, 40))
    throw new ConfigError(`${where}: owner "${config.owner}" must be a DNS label of at most 40 characters (it goes into OpenStack tags)`);
  if (!Number.isInteger(config.concurrency) || config.concurrency < 1 || config.concurrency > 64)
    throw new ConfigError(`${where}: concurrency must be an integer from 1 to 64`);
  if (config.massDeleteThreshold < 1 || config.massDeleteThreshold > 100) throw new ConfigError(`${where}: massDeleteThreshold is a percentage from 1 to 100`);
  return config;
}
