import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { retry } from '../lib/retry.ts';
import { basicAuthorization } from './auth/basic.ts';
import { fetchToken, type Token } from './auth/bearer.ts';
import { challengeScopes, mergeScopes, parseChallenges, scopesCover } from './auth/challenge.ts';
import { noCredentials, type Credential, type CredentialStore } from './auth/credentials.ts';
import { OciError } from './errors.ts';
import { apiHost, isLoopbackHost } from './reference.ts';
import { socketGet, type SocketResponse } from './socket-get.ts';

/**
 * One registry's HTTP API on undici: authentication (anonymous and Basic
 * bearer tokens, Basic), redirects, retries of idempotent requests. Knows
 * nothing of manifests or blobs (manifest.ts, blob.ts, upload.ts do).
 */

export interface RegistryClientOptions {
  /** host[:port] as written in references. */
  registry: string;
  /** Plain http for this registry (loopback test registries, air-gapped mirrors). TLS is never unverified. */
  insecure?: boolean;
  credentials?: CredentialStore;
  /** Extra CA bundle (PEM file) for a registry with a private CA. */
  caFile?: string;
  dispatcher?: Dispatcher;
  /** Retries of idempotent requests after a connection error, 429 or 5xx. Default 3. */
  retries?: number;
  /** Idle time before a request or body is given up (ms). Default 60 s. */
  timeoutMs?: number;
  /** Sent as User-Agent (the caller names itself: `kupenstack/<version>`). */
  userAgent?: string;
  /**
   * How the caller's user turns plain HTTP on, for the message when an https
   * request meets a plain-HTTP registry: `pass --insecure` (CLI, the default)
   * or the manifest field.
   */
  plainHttpAdvice?: string;
}

export type Headers = Record<string, string>;

export interface RegistryResponse {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Dispatcher.ResponseData['body'];
  /** Final URL after redirects. */
  url: string;
}

/** A blob GET's answer, from the socket path or from send(): the body a plain Readable. */
export interface BlobAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
  url: string;
}

export interface SendOptions {
  /** Token scopes this request needs, e.g. `repository:vm/a:pull`. */
  scopes: string[];
  headers?: Headers;
  /** A Buffer (replayable) or a stream (sent once: authenticate first with a bodiless request). */
  body?: Buffer | string | Readable;
  signal?: AbortSignal | undefined;
  /** Statuses handed back as they are (others become OciError). Default: 2xx. */
  accept?: (status: number) => boolean;
}

export function header(res: Pick<RegistryResponse, 'headers'>, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

const defaultAgents = new Map<string, Dispatcher>();

function agentFor(caFile: string | undefined, timeoutMs: number): Dispatcher {
  const key = `${caFile ?? ''}|${timeoutMs}`;
  let d = defaultAgents.get(key);
  if (!d) {
    d = new Agent({
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connect: { timeout: Math.min(timeoutMs, 30_000), ...(caFile ? { ca: readFileSync(caFile) } : {}) },
    });
    defaultAgents.set(key, d);
  }
  return d;
}

/** Registry JSON errors (`{"errors":[{"code","message"}]}`) as one line; the body is never echoed raw. */
function registryErrorSummary(text: string): string {
  try {
    const doc = JSON.parse(text) as { errors?: Array<{ code?: unknown; message?: unknown }> };
    if (Array.isArray(doc.errors) && doc.errors.length > 0) {
      return doc.errors.map((e) => [e.code, e.message].filter((x) => typeof x === 'string' && x).join(': ')).join('; ');
    }
  } catch {
    // not JSON (route-level 404s of distribution are text/plain)
  }
  return text.length > 0 && text.length < 200 && !/[\r\n]/.test(text.trim()) ? text.trim() : '';
}

const idempotent = new Set(['GET', 'HEAD']);

export class RegistryClient {
  readonly registry: string;
  /** scheme://host[:port] of the API. */
  readonly origin: string;
  private readonly credentials: CredentialStore;
  private readonly dispatcher: Dispatcher;
  private readonly retries: number;
  private readonly userAgent: string;
  private readonly plainHttpAdvice: string;
  /** Blob GETs off the socket (getBlob), unless the caller chose its own transport. */
  private readonly socketGets: boolean;
  private readonly ca: Buffer | undefined;
  private readonly timeoutMs: number;
  private tokens: Token[] = [];
  private basic: string | undefined;
  /** Bytes of response bodies read through this client's blob readers. */
  bytesRead = 0;
  /** Requests sent (each attempt, redirect and authentication round counts): what a caller proves "no request" with. */
  requests = 0;
  /** Of those, requests for blobs (`/blobs/`), the ones that move disk bytes. */
  blobRequests = 0;

  constructor(options: RegistryClientOptions) {
    this.registry = options.registry;
    const host = apiHost(options.registry);
    this.origin = `${options.insecure ? 'http' : 'https'}://${host}`;
    this.credentials = options.credentials ?? noCredentials;
    const timeoutMs = options.timeoutMs ?? 60_000;
    this.dispatcher = options.dispatcher ?? agentFor(options.caFile, timeoutMs);
    this.socketGets = options.dispatcher === undefined;
    this.ca = options.caFile && this.socketGets ? readFileSync(options.caFile) : undefined;
    this.timeoutMs = timeoutMs;
    this.retries = options.retries ?? 3;
    this.userAgent = options.userAgent ?? 'kupenstack';
    this.plainHttpAdvice = options.plainHttpAdvice ?? 'pass --insecure';
  }

  private credential(): Credential | undefined {
    return this.credentials.lookup(this.registry);
  }

  private authorization(scopes: string[]): string | undefined {
    if (this.basic) return this.basic;
    const now = Date.now();
    this.tokens = this.tokens.filter((t) => t.expiresAt > now);
    const token = this.tokens.find((t) => scopesCover(t.scopes, scopes));
    return token ? `Bearer ${token.value}` : undefined;
  }

  /**
   * Sends a request: answers 401 by authenticating once (token for the union
   * of the scopes asked and challenged — the upgrade from pull to pull,push),
   * follows redirects (Authorization only to the registry's own origin),
   * retries idempotent requests after connection errors, 429 and 5xx.
   */
  async send(method: string, pathOrUrl: string, options: SendOptions): Promise<RegistryResponse> {
    const accept = options.accept ?? ((s: number) => s >= 200 && s < 300);
    let url = new URL(pathOrUrl, this.origin).toString();
    let authenticated = false;
    let redirects = 0;
    for (;;) {
      const sameOrigin = new URL(url).origin === this.origin;
      const headers = this.headers(sameOrigin, options);
      const res = await this.request(method, url, headers, options, accept);
      const response: RegistryResponse = { status: res.statusCode, headers: res.headers, body: res.body, url };
      if (isRedirect(res.statusCode, header(response, 'location'))) {
        await res.body.dump();
        url = redirectTarget(method, url, header(response, 'location')!, ++redirects);
        continue;
      }
      if (res.statusCode === 401 && sameOrigin) {
        const text = await res.body.text();
        if (authenticated || isStream(options.body)) {
          const detail = `401${authDetail(text, header(response, 'www-authenticate'))}`;
          throw new OciError(
            'oci.auth',
            this.credential()
              ? `${this.registry} refused ${method} ${describe(url)} (${detail}) even after authenticating; check that the credentials for ${this.registry} allow ${options.scopes.join(' ') || 'this'}`
              : `${this.registry} refused anonymous ${method} ${describe(url)} (${detail}); give credentials for ${this.registry} (--docker-config FILE, DOCKER_CONFIG, or a .dockerconfigjson Secret)`,
          );
        }
        await this.authenticate(header(response, 'www-authenticate'), options.scopes, options.signal);
        authenticated = true;
        continue;
      }
      if (accept(res.statusCode)) return response;
      const text = await res.body.text().catch(() => '');
      throw this.httpError(method, url, res.statusCode, text);
    }
  }

  private headers(sameOrigin: boolean, options: SendOptions): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': this.userAgent, ...options.headers };
    const authorization = sameOrigin ? this.authorization(options.scopes) : undefined;
    if (authorization) headers.authorization = authorization;
    return headers;
  }

  /**
   * A blob GET, its body read off the socket into slabs (socket-get.ts): the
   * bulk of a pull. Authentication and redirects as send() does them; an
   * answer that path does not read (an error status but 5xx, a body without
   * Content-Length) or a connection that failed before its answer is asked
   * again through send(), which reads and reports it as before, as is every
   * GET of a client given its own dispatcher.
   */
  async getBlob(path: string, options: SendOptions): Promise<BlobAnswer> {
    if (!this.socketGets) return this.send('GET', path, options);
    const accept = options.accept ?? ((s: number) => s >= 200 && s < 300);
    let url = new URL(path, this.origin).toString();
    let authenticated = false;
    let redirects = 0;
    for (;;) {
      const sameOrigin = new URL(url).origin === this.origin;
      const res = await this.socketGet(url, this.headers(sameOrigin, options), options.signal);
      if (!res) return this.send('GET', url, options);
      if (isRedirect(res.status, res.headers.location)) {
        url = redirectTarget('GET', url, res.headers.location!, ++redirects);
        continue;
      }
      if (res.status === 401 && sameOrigin && !authenticated) {
        await this.authenticate(res.headers['www-authenticate'], options.scopes, options.signal);
        authenticated = true;
        continue;
      }
      if (res.body) return { status: res.status, headers: res.headers, body: res.body, url };
      if (res.status >= 500 && accept(res.status)) return { status: res.status, headers: res.headers, body: Readable.from([]), url };
      return this.send('GET', url, options);
    }
  }

  /** One socket GET (counted as send() counts); undefined when it failed before its answer (send() tries again, with its retries and messages). */
  private async socketGet(url: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<SocketResponse | undefined> {
    this.requests++;
    if (url.includes('/blobs/')) this.blobRequests++;
    try {
      return await socketGet({ url: new URL(url), headers, ca: this.ca, timeoutMs: this.timeoutMs, signal });
    } catch (err) {
      if (signal?.aborted || !(err instanceof OciError) || err.code !== 'oci.network') throw err;
      return undefined;
    }
  }

  /**
   * One request, retried (lib/retry.ts) when it is idempotent and the
   * connection failed or the registry answered 429/5xx. A caller that takes
   * 5xx itself (the blob reader resumes) gets it at once: no nested retries.
   * The last busy answer is handed back as it is, for its error body.
   */
  private async request(
    method: string,
    url: string,
    headers: Record<string, string>,
    options: SendOptions,
    accept: (status: number) => boolean,
  ): Promise<Dispatcher.ResponseData> {
    const retries = idempotent.has(method) ? this.retries : 0;
    return retry(
      async (attempt) => {
        let res: Dispatcher.ResponseData;
        this.requests++;
        if (url.includes('/blobs/')) this.blobRequests++;
        try {
          res = await request(url, { method, headers, body: options.body, dispatcher: this.dispatcher, signal: options.signal });
        } catch (err) {
          if (options.signal?.aborted) throw err;
          if (isPlainHttp(err) && url.startsWith('https:')) {
            throw new PlainHttpError('oci.network', `${this.registry} answered in plain HTTP, not TLS; if this registry has no TLS, ${this.plainHttpAdvice}`, {
              cause: err,
            });
          }
          throw new OciError('oci.network', `${method} ${describe(url)} failed: ${(err as Error).message}`, { cause: err });
        }
        if ((res.statusCode === 429 || res.statusCode >= 500) && !accept(res.statusCode) && attempt < retries) {
          await res.body.dump();
          throw new OciError('oci.registry', `${method} ${describe(url)} → ${res.statusCode}`);
        }
        return res;
      },
      {
        retries,
        baseMs: 200,
        maxMs: 3000,
        retryable: (err) => err instanceof OciError && !(err instanceof PlainHttpError) && (err.code === 'oci.network' || err.code === 'oci.registry'),
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  }

  /** Answers a 401 challenge: a token, or Basic credentials. */
  private async authenticate(wwwAuthenticate: string | undefined, scopes: string[], signal: AbortSignal | undefined): Promise<void> {
    const challenges = parseChallenges(wwwAuthenticate);
    const bearer = challenges.find((c) => c.scheme === 'bearer');
    const credential = this.credential();
    if (bearer) {
      const realm = bearer.params.realm;
      if (!realm) throw new OciError('oci.auth', `${this.registry} asks for a bearer token but names no realm; the registry is misconfigured`);
      const wanted = mergeScopes([...scopes, ...challengeScopes(bearer)]);
      const token = await fetchToken({
        realm,
        service: bearer.params.service,
        scopes: wanted,
        credential,
        registryHost: this.registry,
        dispatcher: this.dispatcher,
        userAgent: this.userAgent,
        signal,
      });
      this.tokens = [token, ...this.tokens.filter((t) => !scopesCover(wanted, t.scopes))];
      return;
    }
    if (challenges.some((c) => c.scheme === 'basic')) {
      if (!credential) {
        throw new OciError(
          'oci.auth',
          `${this.registry} requires a username and password; name a docker config file that has them (--docker-config FILE, DOCKER_CONFIG, or a .dockerconfigjson Secret)`,
        );
      }
      const basic = basicAuthorization(credential);
      if (!basic)
        throw new OciError(
          'oci.auth',
          `${this.registry} asks for Basic auth, but its docker config entry holds an identity token; give a username and password`,
        );
      // Basic sends the password itself: only over https or to a loopback host.
      if (this.origin.startsWith('http:') && !isLoopbackHost(new URL(this.origin).hostname)) {
        throw new OciError(
          'oci.auth',
          `${this.registry} is plain http and not on loopback; KupenStack does not send a password over it: serve the registry over https`,
        );
      }
      this.basic = basic;
      return;
    }
    throw new OciError('oci.auth', `${this.registry} answered 401 without a Bearer or Basic challenge; it cannot be authenticated to`);
  }

  private httpError(method: string, url: string, status: number, text: string): OciError {
    const summary = registryErrorSummary(text);
    const what = `${method} ${describe(url)} → ${status}${summary ? ` (${summary})` : ''}`;
    if (status === 404) return new OciError('oci.not-found', `${this.registry}: ${what}; check the repository, tag or digest`);
    if (status === 403) return new OciError('oci.auth', `${this.registry} denied ${what}; the credentials lack this permission`);
    return new OciError('oci.registry', `${this.registry}: ${what}`);
  }
}

function isRedirect(status: number, location: string | undefined): boolean {
  return status >= 300 && status < 400 && status !== 304 && location !== undefined && location !== '';
}

/** Where a redirect leads, if it may be followed: at most 5, only to https (or http from an http registry). */
function redirectTarget(method: string, url: string, location: string, redirects: number): string {
  if (redirects > 5) throw new OciError('oci.registry', `${method} ${describe(url)}: more than 5 redirects`);
  const next = new URL(location, url);
  if (next.protocol !== 'https:' && !(next.protocol === 'http:' && new URL(url).protocol === 'http:')) {
    throw new OciError('oci.registry', `${describe(url)} redirects to ${next.protocol} ${next.host}; only https (or http from an http registry) is followed`);
  }
  return next.toString();
}

function isStream(body: SendOptions['body']): boolean {
  return body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body);
}

/** Path of a URL without its query (upload URLs carry state tokens). */
export function describe(url: string): string {
  const u = new URL(url);
  return `${u.host}${u.pathname}`;
}

function authDetail(text: string, challenge: string | undefined): string {
  const summary = registryErrorSummary(text);
  const error = parseChallenges(challenge).find((c) => c.params.error)?.params.error;
  return [summary, error]
    .filter(Boolean)
    .map((s) => `, ${s}`)
    .join('');
}

/** A plain-HTTP answer to https: a connection failure (`oci.network`) that no retry can fix. */
class PlainHttpError extends OciError {}

/** OpenSSL's answer to a plain-HTTP reply where a TLS record was expected. */
function isPlainHttp(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  if (!e) return false;
  if (e.code === 'ERR_SSL_WRONG_VERSION_NUMBER' || (typeof e.message === 'string' && /wrong version number|packet length too long/.test(e.message)))
    return true;
  return e.cause !== undefined && e.cause !== err && isPlainHttp(e.cause);
}

/** How a push is told to reach a registry: plain HTTP or not, whose credentials, the client's own settings. */
export interface RegistryAccess {
  insecure?: boolean;
  credentials?: CredentialStore;
  client?: Omit<RegistryClientOptions, 'registry' | 'insecure' | 'credentials'>;
}

/** A client for one registry, as a push is told to reach it. */
export function clientFor(registry: string, access: RegistryAccess): RegistryClient {
  return new RegistryClient({
    ...access.client,
    registry,
    insecure: access.insecure === true,
    ...(access.credentials ? { credentials: access.credentials } : {}),
  });
}
