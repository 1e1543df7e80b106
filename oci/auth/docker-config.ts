import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OciError } from '../errors.ts';
import type { Credential, CredentialStore } from './credentials.ts';

/**
 * Credentials from a docker `config.json` (also podman's auth.json and a
 * Kubernetes `.dockerconfigjson` Secret value: the same `auths` map). Only
 * files the user names are read: an explicit path, or `$DOCKER_CONFIG/config.json`.
 * Credential helpers (`credsStore`, `credHelpers`) would run external
 * programs: not supported, said so when they are the only source.
 */

interface AuthEntry {
  auth?: unknown;
  username?: unknown;
  password?: unknown;
  identitytoken?: unknown;
}

/** `https://index.docker.io/v1/` → docker.io; `https://r.example:5000/v2/` → r.example:5000. */
export function normalizeConfigKey(key: string): string {
  let host = key.replace(/^[a-z]+:\/\//i, '');
  const slash = host.indexOf('/');
  if (slash >= 0) host = host.slice(0, slash);
  host = host.toLowerCase();
  if (host === 'index.docker.io' || host === 'registry-1.docker.io') return 'docker.io';
  return host;
}

function decodeEntry(file: string, key: string, entry: AuthEntry): Credential | undefined {
  const where = `${file}: auths["${key}"]`;
  if (typeof entry.identitytoken === 'string' && entry.identitytoken.length > 0) {
    return { kind: 'identity-token', username: typeof entry.username === 'string' ? entry.username : '<token>', token: entry.identitytoken };
  }
  if (typeof entry.auth === 'string' && entry.auth.length > 0) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw new OciError('oci.credentials', `${where}.auth is not base64 of "username:password"; fix the entry (docker login writes it)`);
    return { kind: 'basic', username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (typeof entry.username === 'string' && typeof entry.password === 'string') {
    return { kind: 'basic', username: entry.username, password: entry.password };
  }
  return undefined;
}

export class DockerConfigCredentials implements CredentialStore {
  readonly file: string;
  private readonly entries = new Map<string, Credential>();
  private readonly helpers = new Set<string>();
  private readonly storeHelper: string | undefined;

  constructor(file: string, json: unknown) {
    this.file = file;
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      throw new OciError(
        'oci.credentials',
        `${file} is not a docker config (a JSON object with "auths"); use the file docker login writes or a .dockerconfigjson Secret value`,
      );
    }
    const doc = json as Record<string, unknown>;
    const auths = doc.auths;
    if (auths !== undefined) {
      if (typeof auths !== 'object' || auths === null || Array.isArray(auths))
        throw new OciError('oci.credentials', `${file}: "auths" must be an object keyed by registry`);
      for (const [key, value] of Object.entries(auths as Record<string, unknown>)) {
        if (typeof value !== 'object' || value === null) continue;
        const credential = decodeEntry(file, key, value);
        if (credential) this.entries.set(normalizeConfigKey(key), credential);
      }
    }
    if (typeof doc.credHelpers === 'object' && doc.credHelpers !== null) {
      for (const key of Object.keys(doc.credHelpers)) this.helpers.add(normalizeConfigKey(key));
    }
    this.storeHelper = typeof doc.credsStore === 'string' ? doc.credsStore : undefined;
  }

  static fromFile(file: string): DockerConfigCredentials {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new OciError('oci.credentials', `cannot read the docker config ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}; check the path`, {
        cause: err,
      });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // The parser's message may quote the file's content (a secret): not kept as cause.
      throw new OciError('oci.credentials', `${file} is not valid JSON; fix the docker config file`);
    }
    return new DockerConfigCredentials(file, json);
  }

  /** The file the user named, else `$DOCKER_CONFIG/config.json`, else none. */
  static fromEnvironment(file: string | undefined, env: NodeJS.ProcessEnv = process.env): DockerConfigCredentials | undefined {
    if (file) return DockerConfigCredentials.fromFile(file);
    if (env.DOCKER_CONFIG) return DockerConfigCredentials.fromFile(join(env.DOCKER_CONFIG, 'config.json'));
    return undefined;
  }

  lookup(registry: string): Credential | undefined {
    const key = normalizeConfigKey(registry);
    const found = this.entries.get(key);
    if (found) return found;
    if (this.helpers.has(key) || (this.storeHelper && this.entries.size === 0)) {
      throw new OciError(
        'oci.credentials',
        `${this.file} delegates the credentials of ${key} to a credential helper, which KupenStack does not run; put them in "auths" (or a .dockerconfigjson Secret)`,
      );
    }
    return undefined;
  }
}
