import type { Credential } from './credentials.ts';

/** `Authorization: Basic …` for a username/password credential. */
export function basicAuthorization(credential: Credential): string | undefined {
  if (credential.kind !== 'basic') return undefined;
  return `Basic ${Buffer.from(`${credential.username}:${credential.password}`, 'utf8').toString('base64')}`;
}
