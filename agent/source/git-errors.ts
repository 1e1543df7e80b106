import { SourceError, type SourceFailure } from './source.ts';
import { redactText } from './git-url.ts';
import { boundExceededIn } from '../util/bounds.ts';

/** Network error codes that mean "the server cannot be reached right now". */
const unreachableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_ABORTED',
  'EmptyServerResponseError',
  'SmartHttpError',
]);

const tlsCodes = /^(CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_TLS_|ERR_SSL_)/;

interface ErrorLike {
  name?: string;
  code?: string;
  message?: string;
  cause?: unknown;
  data?: { statusCode?: number };
}

/**
 * A copy of a library error that keeps only its name, code and redacted
 * message: the original may carry request options or headers, and a logger
 * that serialises `cause` must never find credentials in it.
 */
export function safeCause(err: unknown): Error {
  const e = (err ?? {}) as ErrorLike;
  const copy = new Error(redactText(typeof e.message === 'string' ? e.message : String(err)));
  copy.name = typeof e.name === 'string' ? e.name : 'Error';
  if (typeof e.code === 'string') Object.defineProperty(copy, 'code', { value: e.code, enumerable: true });
  return copy;
}

function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  let current: unknown = err;
  for (let i = 0; i < 5 && current && typeof current === 'object'; i++) {
    out.push(current);
    current = (current as ErrorLike).cause;
  }
  return out;
}

/**
 * Turns what isomorphic-git or the network threw into a SourceError whose
 * message says what failed and what to do. `where` is the redacted URL.
 * Returns undefined for errors that are not about the server (local cache
 * problems), so the caller can treat them as such.
 */
export function classifyRemoteError(err: unknown, where: string, signal?: AbortSignal): SourceError | undefined {
  if (err instanceof SourceError) return err;
  // Over a cluster admin's bound (the pack's bytes, a file in it): Stalled naming the bound, not retried as a broken cache.
  const bound = boundExceededIn(err);
  if (bound) return new SourceError('bound', bound.message, { cause: bound });
  if (signal?.aborted)
    return new SourceError('unreachable', `fetching ${where} was stopped before it finished (${abortReason(signal)}); it is retried on the next run`, {
      cause: safeCause(err),
    });
  for (const e of chain(err)) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (code === 'HttpError' || typeof e.data?.statusCode === 'number') {
      const status = e.data?.statusCode ?? 0;
      return httpFailure(status, where, err);
    }
    if (e.name === 'AbortError' || code === 'ABORT_ERR')
      return new SourceError('unreachable', `fetching ${where} was aborted; it is retried on the next run`, { cause: safeCause(err) });
    if (tlsCodes.test(code))
      return new SourceError(
        'unreachable',
        `the TLS certificate of ${where} is not trusted (${code}); install the server's CA certificate for the agent, or fix the server's certificate`,
        { cause: safeCause(err) },
      );
    if (unreachableCodes.has(code))
      return new SourceError(
        'unreachable',
        `cannot reach the Git server at ${where} (${code}); check the URL and that the server is up. Retried on the next run`,
        { cause: safeCause(err) },
      );
  }
  return undefined;
}

function httpFailure(status: number, where: string, err: unknown): SourceError {
  let failure: SourceFailure = 'unreachable';
  let message: string;
  if (status === 401 || status === 403) {
    failure = 'auth';
    message = `the Git server refused the credentials for ${where} (HTTP ${status}); check the user name and password or token (and that the token may read this repository)`;
  } else if (status === 404) {
    message = `the Git server has no repository at ${where} (HTTP 404); check the URL (some hosts also answer 404 to missing credentials on a private repository)`;
  } else if (status >= 300 && status < 400) {
    message = `the Git server redirects ${where} elsewhere (HTTP ${status}); redirects are not followed, so credentials stay with the configured server. Use the repository's final URL`;
  } else {
    message = `the Git server at ${where} answered HTTP ${status}; retried on the next run`;
  }
  return new SourceError(failure, message, { cause: safeCause(err) });
}

function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason.name === 'TimeoutError' ? 'timed out' : redactText(reason.message);
  return typeof reason === 'string' ? redactText(reason) : 'aborted';
}
