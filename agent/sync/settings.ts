import type { ErrorObject } from 'ajv';
import { validate as validCron } from 'node-cron';
import type { ImageVerify, SyncSpec } from '../model/kinds.generated.ts';
import type { OciSpec } from '../source/oci-secrets.ts';
import { apiVersion, sharedSchemaRegistry, type KindInfo } from '../schema/registry.ts';
import type { JsonSchema } from '../schema/json-schema.ts';
import type { SecretKey } from '../secrets/resolver.ts';
import { checkCredentialSettings, type CredentialSettings } from '../source/credentials.ts';
import { checkGitRef, type GitRef } from '../source/git-ref.ts';
import { commitStatusProviders, repositoryOf, type NotifyTarget } from '../notify/target.ts';
import { isDnsLabel } from '../util/dns-label.ts';
import { parseDuration } from '../util/duration.ts';
import { ConfigError } from '../config/config-error.ts';
import { findCycle } from './depends-on.ts';
import type { Locate } from '../config/locate.ts';

/**
 * The `syncs:` entries of kupenstack.yaml. Each entry is `name` plus the Sync
 * kind's spec, validated by Ajv against schemas/sync.schema.json (the schema
 * also holds the standalone-only fields: env/file secret references, owner).
 * SyncConfig is what a run needs from a SyncSpec (durations in ms, defaults
 * filled, owner decided); the in-cluster controller derives it the same way
 * with syncConfigOf. Credentials are never in the file, only named; they are
 * read when used, so a fixed password file works without a restart.
 */

export interface GitSourceConfig {
  url: string;
  ref: GitRef;
  credentials?: CredentialSettings;
  verify?: { mode: 'head' | 'none'; publicKeysFile?: string; publicKeysSecretRef?: { name: string } };
}

export interface SyncConfig {
  name: string;
  source: { git?: GitSourceConfig; oci?: OciSpec; directory?: { path: string } };
  /** Directory inside the source, relative to its root. */
  path: string;
  intervalMs: number;
  retryIntervalMs: number;
  timeoutMs: number;
  /** Cron expression (UTC) for extra runs. */
  schedule?: string;
  suspend: boolean;
  prune: boolean;
  /** Names of the Syncs that must be Ready at their newest revision before this one applies. */
  dependsOn: string[];
  /** Ready only once every applied object is Ready (Flux's wait). */
  wait: boolean;
  /** Ownership identity of this Sync's objects (two Syncs must never share one: each prunes what its owner made). */
  owner: string;
  projectPrefix: string;
  webhook?: { secret: SecretKey };
  /** Default signature policy of OCI Images (an Image's spec.verify wins). */
  imageVerify?: ImageVerify;
  /** Where outcomes are sent (`notify:`); absent: nowhere. */
  notify?: NotifyTarget[];
}

const cronMacros: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** node-cron knows no @-macros; the schema allows them. */
export function cronExpression(schedule: string): string {
  return cronMacros[schedule] ?? schedule;
}

interface Context {
  at: Locate;
  owner: string;
  projectPrefix: string;
}

type Path = (string | number)[];

export function parseSyncs(raw: unknown, ctx: Context): SyncConfig[] {
  const { at } = ctx;
  if (!Array.isArray(raw)) throw new ConfigError(`${at(['syncs'])}: "syncs" must be a list of Sync entries (name, source, interval, …)`);
  const info = syncKind();
  const syncs = raw.map((entry, i) => {
    const p: Path = ['syncs', i];
    const { name, spec } = checkEntry(entry, p, info, ctx);
    return syncConfigOf(
      name,
      spec,
      { owner: ctx.owner, projectPrefix: ctx.projectPrefix, single: raw.length === 1 },
      (key, message) => new ConfigError(`${at([...p, ...key])}: ${message}`),
    );
  });
  const names = new Set<string>();
  const owners = new Map<string, string>();
  syncs.forEach((s, i) => {
    if (names.has(s.name)) throw new ConfigError(`${at(['syncs', i, 'name'])}: two Syncs are named "${s.name}"; names must be unique`);
    names.add(s.name);
    const other = owners.get(s.owner);
    if (other)
      throw new ConfigError(
        `${at(['syncs', i, 'owner'])}: Syncs "${other}" and "${s.name}" have the same owner "${s.owner}" and would prune each other's objects; give each its own owner`,
      );
    owners.set(s.owner, s.name);
  });
  syncs.forEach((s, i) =>
    s.dependsOn.forEach((d, j) => {
      const at = ctx.at(['syncs', i, 'dependsOn', j, 'name']);
      if (d === s.name) throw new ConfigError(`${at}: Sync "${s.name}" depends on itself; remove this entry`);
      if (!names.has(d))
        throw new ConfigError(
          `${at}: Sync "${s.name}" depends on "${d}", which is not in syncs: (known: ${[...names].join(', ')}); fix the name or add that Sync`,
        );
    }),
  );
  const cycle = findCycle(new Map(syncs.map((s) => [s.name, s.dependsOn])));
  if (cycle) {
    const i = syncs.findIndex((s) => s.name === cycle[0]);
    throw new ConfigError(
      `${ctx.at(['syncs', i, 'dependsOn'])}: dependsOn forms a cycle ${cycle.join(' → ')}: each would wait for the other forever; remove one of these dependencies`,
    );
  }
  return syncs;
}

/** One entry: `name` plus a Sync spec, checked by the Sync kind's schema. */
function checkEntry(entry: unknown, p: Path, info: KindInfo, ctx: Context): { name: string; spec: SyncSpec } {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw new ConfigError(`${ctx.at(p)}: expected a mapping: name, source, interval, …`);
  const { name, ...spec } = entry as Record<string, unknown>;
  if (typeof name !== 'string' || name === '')
    throw new ConfigError(`${ctx.at([...p, 'name'])}: ${name === undefined ? 'missing "name"' : '"name" must be a non-empty string'}`);
  // The owner default and the state dir are made from the name: a DNS label, not the wider subdomain of metadata.name.
  if (!isDnsLabel(name))
    throw new ConfigError(`${ctx.at([...p, 'name'])}: Sync name "${name}" must be a DNS label (lower-case letters, digits, '-') of at most 63 characters`);
  if ('cloud' in spec)
    throw new ConfigError(
      `${ctx.at([...p, 'cloud'])}: a standalone Sync uses the cloud of kupenstack.yaml (the top-level "cloud:" setting); remove "cloud" here`,
    );
  // Impersonation needs a cluster: standalone applies to OpenStack with the agent's own credentials.
  for (const key of ['serviceAccountName', 'serviceAccountNamespace'])
    if (key in spec)
      throw new ConfigError(
        `${ctx.at([...p, key])}: "${key}" is for a Sync resource in the cluster (the identity its writes impersonate); ` +
          `a standalone Sync applies with the agent's own cloud credentials: remove "${key}" here`,
      );
  const valid = info.validate({ apiVersion, kind: 'Sync', metadata: { name }, spec });
  const errors = valid ? [] : relevant(info.validate.errors ?? []);
  if (errors.length === 0) return { name, spec: spec as unknown as SyncSpec };
  // Of the most telling kind of error, the one first in the file.
  const best = errors
    .filter((e) => rank(e) === rank(errors[0]!))
    .map((e) => explain(e, info))
    .map((x) => ({ ...x, where: ctx.at([...p, ...x.path]) }));
  const { where, message } = best.sort((a, b) => compareWhere(a.where, b.where))[0]!;
  throw new ConfigError(`${where}: ${message}`);
}

/**
 * A run's settings from a Sync spec: defaults from the schema, durations in
 * ms, the owner. Semantic checks the schema cannot express throw through
 * `fail(key path inside the spec, message)`.
 */
export function syncConfigOf(
  name: string,
  spec: SyncSpec,
  defaults: { owner: string; projectPrefix: string; single: boolean },
  fail: (key: Path, message: string) => Error,
): SyncConfig {
  const path = spec.path ?? String(specDefault('path'));
  if (path.split(/[\\/]/).includes('..') || path.startsWith('/')) throw fail(['path'], `path "${path}" must stay inside the source: relative, without '..'`);
  const intervalMs = parseDuration(spec.interval ?? String(specDefault('interval')));
  if (intervalMs < 1000) throw fail(['interval'], 'interval must be at least 1s');
  if (spec.schedule !== undefined && !validCron(cronExpression(spec.schedule)))
    throw fail(['schedule'], `"${spec.schedule}" is not a cron schedule: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, …`);
  // One Sync may keep the instance's owner (what `kupenstack apply` uses); several get one each.
  const owner = spec.owner ?? (defaults.single ? defaults.owner : `${defaults.owner}-${name}`);
  if (!isDnsLabel(owner, 40))
    throw fail(
      [spec.owner === undefined ? 'name' : 'owner'],
      `owner "${owner}" must be a DNS label of at most 40 characters (it goes into OpenStack tags); set "owner" on this Sync`,
    );
  const sync: SyncConfig = {
    name,
    source: sourceOf(spec, fail),
    path,
    intervalMs,
    retryIntervalMs: spec.retryInterval ? parseDuration(spec.retryInterval) : intervalMs,
    timeoutMs: spec.timeout ? parseDuration(spec.timeout) : intervalMs,
    suspend: spec.suspend ?? false,
    prune: spec.prune ?? true,
    dependsOn: (spec.dependsOn ?? []).map((d) => d.name),
    wait: spec.wait ?? false,
    owner,
    projectPrefix: spec.projectPrefix ?? defaults.projectPrefix,
  };
  if (spec.schedule !== undefined) sync.schedule = spec.schedule;
  if (spec.imageVerify !== undefined) sync.imageVerify = spec.imageVerify;
  const w = spec.webhook;
  if (w)
    sync.webhook = {
      secret:
        w.secretEnv !== undefined ? { env: w.secretEnv } : w.secretFile !== undefined ? { file: w.secretFile } : { name: w.secretRef!.name, key: 'token' },
    };
  if (spec.notify?.length) sync.notify = spec.notify.map((n, i) => notifyTargetOf(n, i, spec, fail));
  return sync;
}

/** One `notify:` entry: what each provider needs is there, the secret named once. */
function notifyTargetOf(n: NonNullable<SyncSpec['notify']>[number], i: number, spec: SyncSpec, fail: (key: Path, message: string) => Error): NotifyTarget {
  const p: Path = ['notify', i];
  const named = (['secretRef', 'secretEnv', 'secretFile'] as const).filter((k) => n[k] !== undefined);
  if (named.length > 1) throw fail([...p, named[1]!], `give one of secretRef, secretEnv or secretFile, not ${named.join(' and ')}`);
  const t: NotifyTarget = { provider: n.provider, events: n.events ?? [] };
  if (n.secretRef) t.secret = { name: n.secretRef.name, key: 'token' };
  else if (n.secretEnv !== undefined) t.secret = { env: n.secretEnv };
  else if (n.secretFile !== undefined) t.secret = { file: n.secretFile };
  if (n.url !== undefined) t.url = n.url;
  const chat = n.provider === 'slack' || n.provider === 'teams';
  if (n.url === undefined && !(chat && t.secret)) {
    throw fail(
      [...p, 'url'],
      chat
        ? `${n.provider} needs its incoming-webhook address: put it in a Secret's token key (secretRef) — the address is a credential — or in url`
        : `${n.provider} needs url: ${n.provider === 'webhook' ? 'the address to POST to' : 'the API base, e.g. https://api.github.com, https://gitlab.example/api/v4, https://gitea.example/api/v1'}`,
    );
  }
  if (commitStatusProviders.includes(n.provider)) {
    const repository = n.repository ?? (spec.source.git ? repositoryOf(spec.source.git.url) : undefined);
    if (!repository)
      throw fail(
        [...p, 'repository'],
        `a ${n.provider} commit status needs the repository as owner/repo on the forge (source.git.url has no owner/repo path to default to)`,
      );
    t.repository = repository;
  }
  return t;
}

function sourceOf(spec: SyncSpec, fail: (key: Path, message: string) => Error): SyncConfig['source'] {
  const { git, oci, directory } = spec.source;
  if (directory) return { directory: { path: directory.path } };
  if (oci) return { oci };
  if (!git) throw fail(['source'], 'source needs exactly one of git, oci or directory');
  const gp = ['source', 'git'];
  if (/^[a-z]+:\/\/[^/@]*:[^/@]*@/i.test(git.url)) throw fail([...gp, 'url'], 'the url carries a password; put it in passwordEnv or passwordFile instead');
  let ref: GitRef;
  try {
    ref = checkGitRef(git.ref);
  } catch (err) {
    throw fail([...gp, 'ref'], (err as Error).message);
  }
  const out: GitSourceConfig = { url: git.url, ref };
  const credentials: CredentialSettings = {};
  if (git.secretRef) credentials.secretRef = { name: git.secretRef.name };
  for (const k of ['username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile'] as const) if (git[k] !== undefined) credentials[k] = git[k];
  const problem = checkCredentialSettings(credentials);
  if (problem) throw fail([...gp, problem.key], problem.message);
  if (Object.keys(credentials).length > 0) out.credentials = credentials;
  if (git.verify) {
    const { mode, publicKeysFile, publicKeysSecretRef } = git.verify;
    if (mode === 'head' && !publicKeysFile && !publicKeysSecretRef)
      throw fail([...gp, 'verify'], 'verify.mode head needs publicKeysFile (trusted PGP public keys) or publicKeysSecretRef');
    out.verify = {
      mode,
      ...(publicKeysFile ? { publicKeysFile } : {}),
      ...(publicKeysSecretRef ? { publicKeysSecretRef: { name: publicKeysSecretRef.name } } : {}),
    };
  }
  return { git: out };
}

/** The Sync kind as the schema registry compiles it (once per process, shared with the runner). */
function syncKind(): KindInfo {
  const sync = sharedSchemaRegistry().kinds.get('Sync');
  if (!sync) throw new Error('schemas/sync.schema.json is missing from the agent');
  return sync;
}

function specDefault(key: string): unknown {
  return syncKind().schema.properties?.spec?.properties?.[key]?.default;
}

/**
 * Errors inside oneOf branches only explain the combinator's own error. An
 * unknown key comes first: it usually explains a missing one (a typo).
 */
function relevant(errors: ErrorObject[]): ErrorObject[] {
  return errors.filter((e) => !/\/(oneOf|anyOf)\/\d+\//.test(e.schemaPath) && !/\/not\//.test(e.schemaPath)).sort((a, b) => rank(a) - rank(b));
}

function rank(e: ErrorObject): number {
  return e.keyword === 'additionalProperties' ? 0 : e.keyword === 'required' ? 2 : 1;
}

/** Orders `file:line:col (key)` locations by line, then column. */
function compareWhere(a: string, b: string): number {
  const pos = (w: string): number[] => (/:(\d+):(\d+) \(/.exec(w) ?? [0, 0, 0]).slice(1).map(Number);
  const [la = 0, ca = 0] = pos(a);
  const [lb = 0, cb = 0] = pos(b);
  return la - lb || ca - cb;
}

/** Messages for values whose schema pattern says little to a reader. */
const patternMessages: { test: (schema: JsonSchema, path: Path) => boolean; message: (value: string, key: string) => string }[] = [
  { test: (s) => s.description?.startsWith('A Go-style duration') === true, message: (v) => `"${v}" is not a duration; write e.g. 30s, 5m or 1h30m` },
  {
    test: (s) => s.description?.startsWith('A cron schedule') === true,
    message: (v) => `"${v}" is not a cron schedule: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, …`,
  },
  { test: (_, p) => p.join('.') === 'source.git.url', message: () => 'url must start with https://, http:// or ssh://' },
  {
    test: (_, p) => p.join('.') === 'source.oci.url',
    message: (v) => `url "${v}" must be oci://HOST[:PORT]/REPOSITORY, without tag or digest (those go in ref)`,
  },
  { test: (_, p) => p.join('.') === 'source.git.ref.commit', message: () => 'commit must be a full SHA (40 or 64 lower-case hex digits)' },
  { test: (_, p) => p.join('.') === 'owner', message: (v) => `owner "${v}" must be a DNS label of at most 40 characters (it goes into OpenStack tags)` },
];

/** What to set when none of a oneOf's forms is there. */
const missingFormHints: Record<string, string> = {
  source: 'source needs exactly one of git (url, ref), oci (url, ref) or directory (path)',
  'source.oci.ref': 'ref needs exactly one of tag, semver or digest',
  // The key form first (what most policies use; keyless is in the README and the schema's description).
  imageVerify: 'missing "publicKey"',
  webhook:
    'webhook needs secretEnv (an environment variable) or secretFile (a file) holding the shared secret, or secretRef (a Secret under secretsDir with a token key)',
};

/** Turns the first Ajv error into a key path inside the entry and a message that says what to write. */
function explain(error: ErrorObject, info: KindInfo): { path: Path; message: string } {
  const instance: Path = error.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s)); // list indexes as numbers: the locator writes them as [i]
  const path: Path = instance[0] === 'metadata' ? ['name'] : instance.slice(1);
  const key = String(path.at(-1) ?? 'syncs');
  const params = error.params as Record<string, unknown>;
  const parent: JsonSchema | undefined = error.parentSchema;
  const data: unknown = error.data;
  switch (error.keyword) {
    case 'additionalProperties': {
      const extra = String(params.additionalProperty);
      const known = Object.keys(parent?.properties ?? {}).filter((k) => !(path.length === 0 && k.startsWith('serviceAccount')));
      return { path: [...path, extra], message: `unknown key "${extra}"; known: ${(path.length === 0 ? ['name', ...known] : known).join(', ')}` };
    }
    case 'required': {
      const missing = String(params.missingProperty);
      const refHint = path.includes('oci') ? ' (tag, semver or digest)' : ' (branch, tag, semver or commit)';
      const hint = missing === 'source' ? ' (git: {url, ref}, oci: {url, ref} or directory: {path})' : missing === 'ref' ? refHint : '';
      return { path, message: `missing "${missing}"${hint}` };
    }
    case 'type':
      if (params.type === 'object') return { path, message: `expected a mapping with keys ${Object.keys(parent?.properties ?? {}).join(', ')}` };
      return {
        path,
        message: `"${key}" must be ${params.type === 'boolean' ? 'true or false' : params.type === 'string' ? 'a non-empty string' : `a ${String(params.type)}`}`,
      };
    case 'minLength':
      return { path, message: `"${key}" must be a non-empty string` };
    case 'pattern': {
      const special = patternMessages.find((m) => parent && m.test(parent, path));
      if (special) return { path, message: special.message(String(data), key) };
      return { path, message: `${JSON.stringify(data)} does not match ${String(params.pattern)}${parent?.description ? ` (${parent.description})` : ''}` };
    }
    case 'enum':
      return {
        path,
        message: `${JSON.stringify(data)} is not allowed; use one of: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    case 'oneOf': {
      const forms = ((error.schema as JsonSchema[] | undefined) ?? []).flatMap((b) => b.required ?? []);
      const several = Array.isArray(params.passingSchemas);
      const hint = missingFormHints[path.join('.')];
      if (!several && hint) return { path, message: hint };
      return { path, message: `${key} needs exactly one of ${forms.slice(0, -1).join(', ')} or ${forms.at(-1) ?? '?'}` };
    }
    case 'not':
      return { path, message: 'give the Git password one way only: secretRef, passwordEnv or passwordFile' };
    default:
      return { path, message: `${JSON.stringify(data)} ${error.message ?? 'is not valid'}; see the ${info.kind} kind's schema (${info.file})` };
  }
}
