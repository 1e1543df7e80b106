import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse } from 'yaml';
import { CloudConfigError } from './errors.ts';

export type Credentials =
  | { type: 'password'; username?: string; userId?: string; password: string; userDomainName?: string; userDomainId?: string }
  | {
      type: 'application-credential';
      id?: string;
      name?: string;
      secret: string;
      username?: string;
      userId?: string;
      userDomainName?: string;
      userDomainId?: string;
    };

/** One cloud of a clouds.yaml (openstacksdk format), resolved and checked. */
export interface CloudConfig {
  name: string;
  file: string;
  authUrl: string;
  credentials: Credentials;
  /** The scope the credentials log in to (the "admin" project of the agent). */
  project?: { id?: string; name?: string; domainId?: string; domainName?: string };
  regionName?: string;
  interface: 'public' | 'internal' | 'admin';
  /** false only when the file says `verify: false`. */
  verify: boolean;
  cacert?: string;
  /** Per-request timeout (openstacksdk's `api_timeout`, in seconds); the transport's default otherwise. */
  timeoutMs?: number;
}

/** Where openstacksdk looks, in its order; an explicit file comes first. */
function cloudsFileCandidates(explicit?: string): string[] {
  const env = process.env.OS_CLIENT_CONFIG_FILE;
  return [explicit, env, join(process.cwd(), 'clouds.yaml'), join(homedir(), '.config/openstack/clouds.yaml'), '/etc/openstack/clouds.yaml'].filter(
    (f): f is string => Boolean(f),
  );
}

export function loadCloud(name: string, explicitFile?: string): CloudConfig {
  const candidates = cloudsFileCandidates(explicitFile);
  const file = explicitFile ?? candidates.find((f) => existsSync(f));
  if (!file || !existsSync(file)) {
    throw new CloudConfigError(`no clouds.yaml found (looked in ${candidates.join(', ')}); create one or pass --clouds FILE`);
  }
  const clouds = readClouds(file);
  const secure = readClouds(join(dirname(file), 'secure.yaml'), true);
  const raw = clouds[name];
  if (!raw) {
    const known = Object.keys(clouds);
    throw new CloudConfigError(`cloud "${name}" is not in ${file}${known.length ? `; it has: ${known.join(', ')}` : ''}`);
  }
  return resolveCloud(name, file, deepMerge(raw, secure[name] ?? {}));
}

function readClouds(file: string, optional = false): Record<string, Record<string, unknown>> {
  if (optional && !existsSync(file)) return {};
  let doc: unknown;
  try {
    doc = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CloudConfigError(`${file} is not valid YAML: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`, { cause: err });
  }
  const clouds = (doc as { clouds?: unknown } | null)?.clouds;
  if (!clouds || typeof clouds !== 'object') {
    if (optional) return {};
    throw new CloudConfigError(`${file} has no "clouds:" mapping`);
  }
  return clouds as Record<string, Record<string, unknown>>;
}

function resolveCloud(name: string, file: string, raw: Record<string, unknown>): CloudConfig {
  const where = `${file}, cloud "${name}"`;
  const auth = (raw.auth ?? {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);
  const authUrl = str(auth.auth_url);
  if (!authUrl) throw new CloudConfigError(`${where}: auth.auth_url is missing`);
  const authType = str(raw.auth_type) ?? 'password';
  const user = {
    username: str(auth.username),
    userId: str(auth.user_id),
    userDomainName: str(auth.user_domain_name) ?? str(auth.domain_name),
    userDomainId: str(auth.user_domain_id) ?? str(auth.domain_id),
  };
  let credentials: Credentials;
  if (authType === 'password' || authType === 'v3password') {
    const password = str(auth.password);
    if (!password) throw new CloudConfigError(`${where}: auth.password is missing (put it in the file or in secure.yaml beside it)`);
    if (!user.username && !user.userId) throw new CloudConfigError(`${where}: auth.username or auth.user_id is missing`);
    credentials = { type: 'password', ...user, password };
  } else if (authType === 'v3applicationcredential') {
    const secret = str(auth.application_credential_secret);
    const id = str(auth.application_credential_id);
    const credName = str(auth.application_credential_name);
    if (!secret) throw new CloudConfigError(`${where}: auth.application_credential_secret is missing`);
    if (!id && !credName) throw new CloudConfigError(`${where}: auth.application_credential_id (or _name with a user) is missing`);
    credentials = { type: 'application-credential', id, name: credName, secret, ...user };
  } else {
    throw new CloudConfigError(`${where}: auth_type "${authType}" is not supported; use password or v3applicationcredential`);
  }
  const iface = str(raw.interface) ?? str(raw.endpoint_type) ?? 'public';
  if (iface !== 'public' && iface !== 'internal' && iface !== 'admin') throw new CloudConfigError(`${where}: interface must be public, internal or admin`);
  const projectId = str(auth.project_id) ?? str(auth.tenant_id);
  const projectName = str(auth.project_name) ?? str(auth.tenant_name);
  const cacert = str(raw.cacert);
  if (cacert && !existsSync(cacert)) throw new CloudConfigError(`${where}: cacert ${cacert} does not exist`);
  const apiTimeout = raw.api_timeout === undefined ? undefined : Number(raw.api_timeout);
  if (apiTimeout !== undefined && !(apiTimeout > 0)) throw new CloudConfigError(`${where}: api_timeout must be a number of seconds above 0`);
  return {
    name,
    file,
    authUrl: authUrl.replace(/\/+$/, ''),
    credentials,
    project:
      projectId || projectName
        ? {
            id: projectId,
            name: projectName,
            domainId: str(auth.project_domain_id) ?? user.userDomainId,
            domainName: str(auth.project_domain_name) ?? user.userDomainName,
          }
        : undefined,
    regionName: str(raw.region_name),
    interface: iface,
    verify: raw.verify !== false,
    cacert,
    ...(apiTimeout !== undefined ? { timeoutMs: Math.round(apiTimeout * 1000) } : {}),
  };
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      prev && typeof prev === 'object' && v && typeof v === 'object' && !Array.isArray(v)
        ? deepMerge(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}
