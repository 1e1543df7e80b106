import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { KupenstackError } from '../errors.ts';

/** The standalone configuration (`kupenstack.yaml`): where the cloud is and how the agent names and owns things. */
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

export class ConfigError extends KupenstackError {
  constructor(message: string) {
    super('config', message);
  }
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function loadConfig(file: string | undefined): AgentConfig {
  if (!file) return { ...defaultConfig };
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${file}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  }
  if (raw === null || raw === undefined) return { ...defaultConfig };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${file}: expected a mapping of settings`);
  const config: AgentConfig = { ...defaultConfig };
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!(key in defaultConfig) && key !== 'cloud' && key !== 'clouds') throw new ConfigError(`${file}: unknown setting "${key}"; known: cloud, clouds, ${Object.keys(defaultConfig).join(', ')}`);
    const expected = key === 'cloud' || key === 'clouds' ? 'string' : typeof defaultConfig[key as keyof AgentConfig];
    if (typeof value !== expected) throw new ConfigError(`${file}: "${key}" must be a ${expected}`);
    (config as unknown as Record<string, unknown>)[key] = value;
  }
  return checkConfig(config, file);
}

export function checkConfig(config: AgentConfig, where = 'configuration'): AgentConfig {
  if (!dnsLabel.test(config.owner) || config.owner.length > 40) throw new ConfigError(`${where}: owner "${config.owner}" must be a DNS label of at most 40 characters (it goes into OpenStack tags)`);
  if (!Number.isInteger(config.concurrency) || config.concurrency < 1 || config.concurrency > 64) throw new ConfigError(`${where}: concurrency must be an integer from 1 to 64`);
  if (config.massDeleteThreshold < 1 || config.massDeleteThreshold > 100) throw new ConfigError(`${where}: massDeleteThreshold is a percentage from 1 to 100`);
  return config;
}
