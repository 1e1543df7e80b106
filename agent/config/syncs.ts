import { readFileSync } from 'node:fs';
import { validate as validCron } from 'node-cron';
import { ConfigError } from './config-error.ts';
import type { Locate } from './config.ts';

/**
 * The `syncs:` entries of kupenstack.yaml: the standalone twin of the Sync
 * kind's spec. Credentials are never in the file itself, only the name of an
 * environment variable or a file holding them; they are read when used, so a
 * fixed password file takes effect without restarting the agent.
 */

/** Where a secret is: an environment variable or a file (whole content, trailing newline dropped). */
export interface SecretRef {
  env?: string;
  file?: string;
}

export interface GitRef {
  branch?: string;
  tag?: string;
  semver?: string;
  commit?: string;
}

/** Git credentials by reference (the Git source resolves them on every fetch). */
export interface GitCredentialSettings {
  username?: string;
  usernameEnv?: string;
  usernameFile?: string;
  passwordEnv?: string;
  passwordFile?: string;
}

export interface GitSourceConfig {
  url: string;
  ref: GitRef;
  credentials?: GitCredentialSettings;
  verify?: { mode: 'head' | 'none'; publicKeysFile?: string };
}

export interface SyncConfig {
  name: string;
  source: { git?: GitSourceConfig; directory?: { path: string } };
  /** Directory inside the source, relative to its root. */
  path: string;
  intervalMs: number;
  retryIntervalMs: number;
  timeoutMs: number;
  /** Cron expression (UTC) for extra runs. */
  schedule?: string;
  suspend: boolean;
  prune: boolean;
  /** Ownership identity of this Sync's objects (two Syncs must never share one: each prunes what its owner made). */
  owner: string;
  projectPrefix: string;
  webhook?: { secret: SecretRef };
}


const durationPattern = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const cronMacros: Record<string, string> = { '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0', '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *' };

export function parseDuration(text: string): number {
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) ms += Number(n) * (unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000);
  return ms;
}

/** node-cron knows no @-macros; the schema allows them. */
export function cronExpression(schedule: string): string {
  return cronMacros[schedule] ?? schedule;
}

interface Context {
  at: Locate;
  owner: string;
  projectPrefix: string;
}

export function parseSyncs(raw: unknown, ctx: Context): SyncConfig[] {
  const { at } = ctx;
  if (!Array.isArray(raw)) throw new ConfigError(`${at(['syncs'])}: "syncs" must be a list of Sync entries (name, source, interval, …)`);
  const syncs = raw.map((entry, i) => parseSync(entry, ['syncs', i], ctx, raw.length));
  const names = new Set<string>();
  const owners = new Map<string, string>();
  syncs.forEach((s, i) => {
    if (names.has(s.name)) throw new ConfigError(`${at(['syncs', i, 'name'])}: two Syncs are named "${s.name}"; names must be unique`);
    names.add(s.name);
    const other = owners.get(s.owner);
    if (other) throw new ConfigError(`${at(['syncs', i, 'owner'])}: Syncs "${other}" and "${s.name}" have the same owner "${s.owner}" and would prune each other's objects; give each its own owner`);
    owners.set(s.owner, s.name);
  });
  return syncs;
}

function parseSync(raw: unknown, p: (string | number)[], ctx: Context, count: number): SyncConfig {
  const m = mapping(raw, p, ctx, ['name', 'source', 'path', 'interval', 'retryInterval', 'timeout', 'schedule', 'suspend', 'prune', 'owner', 'projectPrefix', 'webhook']);
  const name = string(m.name, [...p, 'name'], ctx, true)!;
  if (!dnsLabel.test(name) || name.length > 63) throw new ConfigError(`${ctx.at([...p, 'name'])}: Sync name "${name}" must be a DNS label (lower-case letters, digits, '-') of at most 63 characters`);
  const source = parseSource(m.source, [...p, 'source'], ctx);
  const path = string(m.path, [...p, 'path'], ctx) ?? './';
  if (path.split(/[\\/]/).includes('..') || path.startsWith('/')) throw new ConfigError(`${ctx.at([...p, 'path'])}: path "${path}" must stay inside the source: relative, without '..'`);
  const intervalMs = duration(m.interval, [...p, 'interval'], ctx) ?? 5 * 60_000;
  const retryIntervalMs = duration(m.retryInterval, [...p, 'retryInterval'], ctx) ?? intervalMs;
  const timeoutMs = duration(m.timeout, [...p, 'timeout'], ctx) ?? intervalMs;
  if (intervalMs < 1000) throw new ConfigError(`${ctx.at([...p, 'interval'])}: interval must be at least 1s`);
  const schedule = string(m.schedule, [...p, 'schedule'], ctx);
  if (schedule !== undefined && !validCron(cronExpression(schedule))) throw new ConfigError(`${ctx.at([...p, 'schedule'])}: "${schedule}" is not a cron schedule: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, …`);
  // One Sync may keep the instance's owner (what `kupenstack apply` uses); several get one each.
  const owner = string(m.owner, [...p, 'owner'], ctx) ?? (count === 1 ? ctx.owner : `${ctx.owner}-${name}`);
  if (!dnsLabel.test(owner) || owner.length > 40) throw new ConfigError(`${ctx.at([...p, m.owner === undefined ? 'name' : 'owner'])}: owner "${owner}" must be a DNS label of at most 40 characters (it goes into OpenStack tags); set "owner" on this Sync`);
  const projectPrefix = string(m.projectPrefix, [...p, 'projectPrefix'], ctx) ?? ctx.projectPrefix;
  const sync: SyncConfig = {
    name,
    source,
    path,
    intervalMs,
    retryIntervalMs,
    timeoutMs,
    suspend: boolean(m.suspend, [...p, 'suspend'], ctx) ?? false,
    prune: boolean(m.prune, [...p, 'prune'], ctx) ?? true,
    owner,
    projectPrefix,
  };
  if (schedule !== undefined) sync.schedule = schedule;
  if (m.webhook !== undefined) {
    const w = mapping(m.webhook, [...p, 'webhook'], ctx, ['secretEnv', 'secretFile']);
    const secret = secretRef(w, [...p, 'webhook'], 'secret', ctx);
    if (!secret) throw new ConfigError(`${ctx.at([...p, 'webhook'])}: webhook needs secretEnv (an environment variable) or secretFile (a file) holding the shared secret`);
    sync.webhook = { secret };
  }
  return sync;
}

function parseSource(raw: unknown, p: (string | number)[], ctx: Context): SyncConfig['source'] {
  if (raw === undefined) throw new ConfigError(`${ctx.at(p.slice(0, -1))}: missing "source" (git: {url, ref} or directory: {path})`);
  const m = mapping(raw, p, ctx, ['git', 'directory']);
  if ((m.git === undefined) === (m.directory === undefined)) throw new ConfigError(`${ctx.at(p)}: source needs exactly one of git or directory`);
  if (m.directory !== undefined) {
    const d = mapping(m.directory, [...p, 'directory'], ctx, ['path']);
    return { directory: { path: string(d.path, [...p, 'directory', 'path'], ctx, true)! } };
  }
  const gp = [...p, 'git'];
  const g = mapping(m.git, gp, ctx, ['url', 'ref', 'username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile', 'verify']);
  const url = string(g.url, [...gp, 'url'], ctx, true)!;
  if (!/^(https?|ssh):\/\//.test(url)) throw new ConfigError(`${ctx.at([...gp, 'url'])}: url must start with https://, http:// or ssh://`);
  if (/^[a-z]+:\/\/[^/@]*:[^/@]*@/i.test(url)) throw new ConfigError(`${ctx.at([...gp, 'url'])}: the url carries a password; put it in passwordEnv or passwordFile instead`);
  if (g.ref === undefined) throw new ConfigError(`${ctx.at(gp)}: missing "ref" (branch, tag, semver or commit)`);
  const r = mapping(g.ref, [...gp, 'ref'], ctx, ['branch', 'tag', 'semver', 'commit']);
  const ref: GitRef = {};
  for (const k of ['branch', 'tag', 'semver', 'commit'] as const) {
    const v = string(r[k], [...gp, 'ref', k], ctx);
    if (v !== undefined) ref[k] = v;
  }
  if (Object.keys(ref).length !== 1) throw new ConfigError(`${ctx.at([...gp, 'ref'])}: ref needs exactly one of branch, tag, semver or commit`);
  if (ref.commit !== undefined && !/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(ref.commit)) throw new ConfigError(`${ctx.at([...gp, 'ref', 'commit'])}: commit must be a full SHA (40 or 64 lower-case hex digits)`);
  const git: GitSourceConfig = { url, ref };
  const credentials: GitCredentialSettings = {};
  for (const k of ['username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile'] as const) {
    const v = string(g[k], [...gp, k], ctx);
    if (v !== undefined) credentials[k] = v;
  }
  if ([credentials.username, credentials.usernameEnv, credentials.usernameFile].filter((v) => v !== undefined).length > 1) throw new ConfigError(`${ctx.at([...gp, 'username'])}: give the user name one way only: username, usernameEnv or usernameFile`);
  if (credentials.passwordEnv !== undefined && credentials.passwordFile !== undefined) throw new ConfigError(`${ctx.at([...gp, 'passwordEnv'])}: give passwordEnv or passwordFile, not both`);
  if (Object.keys(credentials).length > 0 && credentials.passwordEnv === undefined && credentials.passwordFile === undefined) throw new ConfigError(`${ctx.at(gp)}: a user name without passwordEnv (an environment variable) or passwordFile (a file) holding the password or token`);
  if (Object.keys(credentials).length > 0) git.credentials = credentials;
  if (g.verify !== undefined) {
    const v = mapping(g.verify, [...gp, 'verify'], ctx, ['mode', 'publicKeysFile']);
    const mode = string(v.mode, [...gp, 'verify', 'mode'], ctx, true);
    if (mode !== 'head' && mode !== 'none') throw new ConfigError(`${ctx.at([...gp, 'verify', 'mode'])}: verify.mode must be "head" or "none"`);
    const publicKeysFile = string(v.publicKeysFile, [...gp, 'verify', 'publicKeysFile'], ctx);
    if (mode === 'head' && !publicKeysFile) throw new ConfigError(`${ctx.at([...gp, 'verify'])}: verify.mode head needs publicKeysFile (trusted PGP or SSH public keys)`);
    git.verify = publicKeysFile ? { mode, publicKeysFile } : { mode };
  }
  return { git };
}

function secretRef(m: Record<string, unknown>, p: (string | number)[], name: string, ctx: Context): SecretRef | undefined {
  const env = string(m[`${name}Env`], [...p, `${name}Env`], ctx);
  const file = string(m[`${name}File`], [...p, `${name}File`], ctx);
  if (env !== undefined && file !== undefined) throw new ConfigError(`${ctx.at([...p, `${name}Env`])}: give ${name}Env or ${name}File, not both`);
  if (env !== undefined) return { env };
  if (file !== undefined) return { file };
  return undefined;
}

/** Reads a secret when it is needed; the message names where it was looked for, never what it holds. */
export function readSecret(ref: SecretRef, what: string): string {
  if (ref.env !== undefined) {
    const value = process.env[ref.env];
    if (!value) throw new ConfigError(`${what}: environment variable ${ref.env} is not set`);
    return value;
  }
  try {
    return readFileSync(ref.file!, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new ConfigError(`${what}: cannot read ${ref.file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

function mapping(raw: unknown, p: (string | number)[], ctx: Context, known: string[]): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ConfigError(`${ctx.at(p)}: expected a mapping with keys ${known.join(', ')}`);
  for (const key of Object.keys(raw)) if (!known.includes(key)) throw new ConfigError(`${ctx.at([...p, key])}: unknown key "${key}"; known: ${known.join(', ')}`);
  return raw as Record<string, unknown>;
}

function string(v: unknown, p: (string | number)[], ctx: Context, required = false): string | undefined {
  if (v === undefined || v === null) {
    if (required) throw new ConfigError(`${ctx.at(p)}: missing "${String(p.at(-1))}"`);
    return undefined;
  }
  if (typeof v !== 'string' || v === '') throw new ConfigError(`${ctx.at(p)}: "${String(p.at(-1))}" must be a non-empty string`);
  return v;
}

function boolean(v: unknown, p: (string | number)[], ctx: Context): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new ConfigError(`${ctx.at(p)}: "${String(p.at(-1))}" must be true or false`);
  return v;
}

function duration(v: unknown, p: (string | number)[], ctx: Context): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !durationPattern.test(v)) throw new ConfigError(`${ctx.at(p)}: "${typeof v === 'string' ? v : JSON.stringify(v)}" is not a duration; write e.g. 30s, 5m or 1h30m`);
  return parseDuration(v);
}
