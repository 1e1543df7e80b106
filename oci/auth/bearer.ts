import { request, type Dispatcher } from 'undici';
import { OciError } from '../errors.ts';
import { isLoopbackHost } from '../reference.ts';
import { basicAuthorization } from './basic.ts';
import type { Credential } from './credentials.ts';

/**
 * Bearer tokens from a registry's token server (distribution's token auth
 * spec): `GET realm?service=…&scope=…` with Basic credentials (or none, for
 * anonymous pulls), or the OAuth2 POST with a refresh token (docker's
 * `identitytoken`).
 */

export interface Token {
  value: string;
  /** Scopes asked for (the server may grant fewer: a later 401 says so). */
  scopes: string[];
  /** ms since epoch, with a safety margin. */
  expiresAt: number;
}

/**
 * Where a credential may be sent: an https realm, or plain http only on the
 * loopback host the registry itself is on (the test bed, a local mirror).
 * Anything else would hand the password to whoever the registry names.
 */
export function checkRealm(realm: string, registryHost: string, withCredentials: boolean): URL {
  let url: URL;
  try {
    url = new URL(realm);
  } catch {
    throw new OciError('oci.auth', `the registry ${registryHost} names a token realm that is not a URL; the registry is misconfigured`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new OciError('oci.auth', `the registry ${registryHost} names a token realm with scheme ${url.protocol}; only https (or http on loopback) is used`);
  }
  if (withCredentials && url.protocol === 'http:') {
    const registryHostname = new URL(`http://${registryHost}`).hostname;
    if (!(isLoopbackHost(url.hostname) && url.hostname === registryHostname)) {
      throw new OciError(
        'oci.auth',
        `the registry ${registryHost} asks for credentials to be sent to ${url.origin} over plain http; ` +
          `KupenStack sends credentials only to https realms (or http on the registry's own loopback host): fix the registry's token realm`,
      );
    }
  }
  return url;
}

interface TokenResponse {
  token?: unknown;
  access_token?: unknown;
  expires_in?: unknown;
}

export async function fetchToken(options: {
  realm: string;
  service: string | undefined;
  scopes: string[];
  credential: Credential | undefined;
  registryHost: string;
  dispatcher: Dispatcher | undefined;
  userAgent: string;
  signal: AbortSignal | undefined;
}): Promise<Token> {
  const { credential, registryHost, scopes } = options;
  const url = checkRealm(options.realm, registryHost, credential !== undefined);
  const headers: Record<string, string> = { 'user-agent': options.userAgent, accept: 'application/json' };
  let method: 'GET' | 'POST' = 'GET';
  let body: string | undefined;
  if (credential?.kind === 'identity-token') {
    method = 'POST';
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: credential.token, client_id: 'kupenstack' });
    if (options.service) form.set('service', options.service);
    if (scopes.length > 0) form.set('scope', scopes.join(' '));
    body = form.toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else {
    if (options.service) url.searchParams.set('service', options.service);
    for (const scope of scopes) url.searchParams.append('scope', scope);
    if (credential) {
      headers.authorization = basicAuthorization(credential)!;
      url.searchParams.set('account', credential.username);
    }
  }
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, { method, headers, body, dispatcher: options.dispatcher, signal: options.signal, headersTimeout: 30_000, bodyTimeout: 30_000 });
  } catch (err) {
    throw new OciError('oci.network', `cannot reach the token server ${url.origin} of ${registryHost}: ${(err as Error).message}`, { cause: err });
  }
  const text = await res.body.text();
  if (res.statusCode === 401 || res.statusCode === 403) {
    throw new OciError(
      'oci.auth',
      credential
        ? `the token server ${url.origin} of ${registryHost} refused the credentials (${res.statusCode}); check the username and password in the docker config for ${registryHost}`
        : `the token server ${url.origin} of ${registryHost} refuses anonymous access (${res.statusCode}); give credentials (--docker-config or a .dockerconfigjson Secret)`,
    );
  }
  if (res.statusCode !== 200) {
    throw new OciError(
      'oci.auth',
      `the token server ${url.origin} of ${registryHost} answered ${res.statusCode} to a token request for ${scopes.join(' ') || 'no scope'}`,
    );
  }
  let parsed: TokenResponse;
  try {
    parsed = JSON.parse(text) as TokenResponse;
  } catch {
    throw new OciError('oci.auth', `the token server ${url.origin} of ${registryHost} answered something that is not JSON`);
  }
  const value = typeof parsed.token === 'string' && parsed.token ? parsed.token : typeof parsed.access_token === 'string' ? parsed.access_token : '';
  if (!value) throw new OciError('oci.auth', `the token server ${url.origin} of ${registryHost} answered without a token`);
  // The spec's default lifetime is 60 s; renew 10 s early.
  const lifetime = typeof parsed.expires_in === 'number' && parsed.expires_in > 0 ? parsed.expires_in : 60;
  return { value, scopes, expiresAt: Date.now() + Math.max(lifetime - 10, 5) * 1000 };
}
