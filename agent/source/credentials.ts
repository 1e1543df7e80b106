import { inspect } from 'node:util';
import { KupenstackError } from '../errors.ts';
import { EnvFileSecretResolver, SecretNotFoundError } from '../secrets/env-file.ts';
import type { SecretKey, SecretResolver } from '../secrets/resolver.ts';

/**
 * Where a Git credential comes from. Values are named, never written inline:
 * an environment variable, a file, or a Secret (keys `username` and
 * `password`, the Sync kind's `secretRef`). The user name is not a secret and
 * may be given literally. The one credential-settings type of the agent.
 */
export interface CredentialSettings {
  /** A Secret with keys `password` and (optional) `username`; in the cluster a Kubernetes Secret, standalone a directory under secretsDir. */
  secretRef?: { name: string; namespace?: string };
  username?: string;
  usernameEnv?: string;
  usernameFile?: string;
  passwordEnv?: string;
  passwordFile?: string;
}

/** A user name and password (or token) resolved for one Git server. Redacted whenever it is printed or serialised. */
export class GitCredentials {
  readonly username: string;
  readonly #password: string;

  constructor(username: string, password: string) {
    this.username = username;
    this.#password = password;
  }

  get password(): string {
    return this.#password;
  }

  toJSON(): { username: string; password: string } {
    return { username: this.username, password: '[redacted]' };
  }

  toString(): string {
    return `GitCredentials(${this.username}, [redacted])`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}

/** A credential setting points at nothing usable. The message names the variable or file, never its content. */
export class CredentialsError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('source.credentials', message, options);
  }
}

/** Token-only settings (no user name) authenticate as this user; Git hosts ignore the name for tokens. */
const defaultTokenUsername = 'git';

/** Which setting is wrong, and why: checked when kupenstack.yaml is loaded (with its line) and again before each fetch. */
export function checkCredentialSettings(settings: CredentialSettings): { key: keyof CredentialSettings; message: string } | undefined {
  const userSources = (['username', 'usernameEnv', 'usernameFile'] as const).filter((k) => settings[k] !== undefined);
  const passwordSources = (['passwordEnv', 'passwordFile'] as const).filter((k) => settings[k] !== undefined);
  if (settings.secretRef && (userSources.length > 0 || passwordSources.length > 0))
    return {
      key: 'secretRef',
      message: 'give the Git credentials one way only: secretRef (a Secret with username and password keys), or the username/password settings',
    };
  if (userSources.length > 1) return { key: userSources[1]!, message: 'give the Git user name one way only: username, usernameEnv or usernameFile' };
  if (passwordSources.length > 1) return { key: 'passwordFile', message: 'give the Git password one way only: passwordEnv or passwordFile' };
  if (userSources.length > 0 && passwordSources.length === 0 && !settings.secretRef)
    return {
      key: userSources[0]!,
      message:
        'a user name without passwordEnv or passwordFile means no password: add passwordEnv (an environment variable) or passwordFile (a file, e.g. a mounted Secret) holding the password or token',
    };
  return undefined;
}

/**
 * Resolves credential settings through a SecretResolver, reading every value
 * now (so a rotated token is picked up by the next fetch). Returns undefined
 * when nothing is configured (anonymous access).
 */
export async function gitCredentials(
  settings: CredentialSettings | undefined,
  secrets: SecretResolver,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GitCredentials | undefined> {
  if (!settings?.secretRef) return resolveCredentials(settings, env);
  const problem = checkCredentialSettings(settings);
  if (problem) throw new CredentialsError(problem.message);
  const read = async (key: string): Promise<string> => {
    try {
      return await secrets.get({ ...settings.secretRef, key });
    } catch (err) {
      // A token-only Secret has no username key.
      if (key === 'username' && err instanceof SecretNotFoundError && err.problem === 'missing') return defaultTokenUsername;
      throw new CredentialsError(`the Git ${key === 'username' ? 'user name' : key} cannot be read: ${(err as Error).message}`, { cause: err });
    }
  };
  const password = await read('password');
  return credentialsOf(await read('username'), password);
}

function credentialsOf(username: string, password: string): GitCredentials {
  if (username.includes(':'))
    throw new CredentialsError('the Git user name contains ":", which Basic authentication cannot carry; check the user name setting');
  return new GitCredentials(username, password);
}

/** How the Git settings word a missing value, after "the Git password " (tests and users match on it). */
function phrase(err: SecretNotFoundError): string {
  const { ref } = err;
  if (ref.env !== undefined) return `comes from the environment variable ${ref.env}, which is not set or empty; set it in the agent's environment`;
  if (err.problem === 'empty') return `file ${ref.file ?? ''} is empty; write the value into it`;
  return `file ${ref.file ?? ''} cannot be read (${String((err.cause as NodeJS.ErrnoException | undefined)?.code ?? 'error')}); check the path and its permissions`;
}

/** Env/file credential settings, read now (gitCredentials calls it for them before every fetch). */
export function resolveCredentials(settings: CredentialSettings | undefined, env: NodeJS.ProcessEnv = process.env): GitCredentials | undefined {
  if (!settings) return undefined;
  const problem = checkCredentialSettings(settings);
  if (problem) throw new CredentialsError(problem.message);
  if (settings.secretRef) throw new CredentialsError("a Git secretRef is read through the agent's secret resolver; use gitCredentials");
  if (settings.passwordEnv === undefined && settings.passwordFile === undefined) return undefined;
  const secrets = new EnvFileSecretResolver({ secretsDir: '.', env });
  const read = (ref: SecretKey, what: string): string => {
    try {
      return secrets.getSync(ref);
    } catch (err) {
      if (err instanceof SecretNotFoundError) throw new CredentialsError(`the Git ${what} ${phrase(err)}`, { cause: err });
      throw err;
    }
  };
  const password = read({ env: settings.passwordEnv, file: settings.passwordFile }, 'password');
  const username =
    settings.username ??
    (settings.usernameEnv !== undefined || settings.usernameFile !== undefined
      ? read({ env: settings.usernameEnv, file: settings.usernameFile }, 'user name')
      : defaultTokenUsername);
  return credentialsOf(username, password);
}
