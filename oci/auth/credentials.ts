/**
 * What the user gave us for one registry. Never logged, never put in an
 * error message: only the registry host is ever named.
 */
export type Credential =
  | { kind: 'basic'; username: string; password: string }
  /** docker's `identitytoken`: an OAuth2 refresh token for the token server. */
  | { kind: 'identity-token'; username: string; token: string };

export interface CredentialStore {
  /** Credentials for a registry host[:port], if any. */
  lookup(registry: string): Credential | undefined;
}

export const noCredentials: CredentialStore = { lookup: () => undefined };

/** Credentials for exactly one registry (tests, flags). */
export function staticCredentials(registry: string, credential: Credential): CredentialStore {
  return { lookup: (r) => (r === registry ? credential : undefined) };
}
