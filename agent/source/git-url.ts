import { SourceConfigError } from './config-error.ts';

/**
 * The URL with any user name and password removed, for logs, errors, status
 * and cache keys. Unparseable input is reduced to its scheme-less host part
 * rather than echoed, since it might still hold a secret.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^/@]*@/, '//');
  }
}

/** Replaces every URL with credentials inside a free text (error messages from libraries) by its redacted form. */
export function redactText(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, '$1');
}

/**
 * Checks a Git URL the agent can fetch: http(s) only (isomorphic-git speaks
 * no SSH), and no credentials inside it (they belong in a Secret, a variable
 * or a file, never in the configuration).
 */
export function checkGitUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SourceConfigError(`the Git URL ${redactUrl(url)} is not a valid URL; write it as https://host/org/repo.git`);
  }
  if (parsed.protocol === 'ssh:')
    throw new SourceConfigError(
      `the Git URL ${redactUrl(url)} uses ssh://, which this agent does not support yet; use the https:// URL of the repository with a token`,
    );
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    throw new SourceConfigError(`the Git URL ${redactUrl(url)} must start with https:// (or http:// for a server on a trusted network)`);
  if (parsed.username !== '' || parsed.password !== '') {
    throw new SourceConfigError(
      `the Git URL ${redactUrl(url)} contains a user name or password; remove them from the URL and give them as credentials (secretRef, or usernameEnv/passwordEnv/passwordFile)`,
    );
  }
  if (parsed.search !== '' || parsed.hash !== '') throw new SourceConfigError(`the Git URL ${redactUrl(url)} has a query or fragment; remove it`);
  return parsed;
}
