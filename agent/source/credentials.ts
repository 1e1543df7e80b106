import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { KupenstackError } from '../errors.ts';

/**
 * Where a Git credential comes from. Values are named, never written inline:
 * an environment variable or a file (a mounted Secret). The user name is not
 * a secret and may be given literally.
 */
export interface CredentialSettings {
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
export const defaultTokenUsername = 'git';

/**
 * Resolves credential settings against the environment and the file system.
 * Returns undefined when nothing is configured (anonymous access).
 */
export function resolveCredentials(settings: CredentialSettings | undefined, env: NodeJS.ProcessEnv = process.env): GitCredentials | undefined {
  if (!settings) return undefined;
  const userSources = [settings.username !== undefined, settings.usernameEnv !== undefined, settings.usernameFile !== undefined].filter(Boolean).length;
  if (userSources > 1) throw new CredentialsError('give the Git user name one way only: username, usernameEnv or usernameFile');
  if (settings.passwordEnv !== undefined && settings.passwordFile !== undefined) throw new CredentialsError('give the Git password one way only: passwordEnv or passwordFile');
  const hasPassword = settings.passwordEnv !== undefined || settings.passwordFile !== undefined;
  if (!hasPassword) {
    if (userSources === 0) return undefined;
    throw new CredentialsError('a Git user name is set but no password: add passwordEnv (an environment variable) or passwordFile (a file, e.g. a mounted Secret) holding the password or token');
  }
  const password = settings.passwordEnv !== undefined ? fromEnv(settings.passwordEnv, 'password', env) : fromFile(settings.passwordFile ?? '', 'password');
  const username = settings.username ?? (settings.usernameEnv !== undefined ? fromEnv(settings.usernameEnv, 'user name', env) : settings.usernameFile !== undefined ? fromFile(settings.usernameFile, 'user name') : defaultTokenUsername);
  if (username.includes(':')) throw new CredentialsError('the Git user name contains ":", which Basic authentication cannot carry; check the user name setting');
  return new GitCredentials(username, password);
}

function fromEnv(name: string, what: string, env: NodeJS.ProcessEnv): string {
  const value = env[name];
  if (value === undefined || value === '') throw new CredentialsError(`the Git ${what} comes from the environment variable ${name}, which is not set or empty; set it in the agent's environment`);
  return value;
}

function fromFile(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new CredentialsError(`the Git ${what} file ${path} cannot be read (${code}); check the path and its permissions`);
  }
  // Files written by `echo` end in a newline that is not part of the secret.
  const value = text.replace(/\r?\n$/, '');
  if (value === '') throw new CredentialsError(`the Git ${what} file ${path} is empty; write the ${what} into it`);
  return value;
}
