import { readFileSync } from 'node:fs';
import { Agent, fetch, type Dispatcher, type RequestInit } from 'undici';
import type { Progress } from '../../lib/progress.ts';
import { retry } from '../../lib/retry.ts';
import type { ApiCounters } from './counters.ts';
import { errorDetail, OpenStackError, WriteHeld } from './errors.ts';

export interface TransportOptions {
  counters: ApiCounters;
  /** TLS verification; off only when the cloud config says so explicitly. */
  verify: boolean;
  cacert?: string;
  timeoutMs?: number;
  /** Retries after a 429 (any method), and of idempotent requests after a 5xx or a broken connection. */
  retries?: number;
}

export interface HttpRequest {
  service: string;
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** A JSON value, or raw bytes. */
  json?: unknown;
  body?: Uint8Array | NodeJS.ReadableStream;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Counted under this method instead (token requests count as AUTH: they change nothing in the cloud). */
  countAs?: string;
  /** Safe to repeat after a broken connection although not idempotent by method (a token request). */
  retryable?: boolean;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body when the answer says it is JSON (parsed once, here, so a cut body is a transport failure). */
  json?: unknown;
}

/**
 * What a write waits for before it leaves: the controller's finalizers, a create's journal line (act/journaled.ts).
 * Undefined lets the write go; a Progress holds it: nothing is sent and the request fails with WriteHeld (the engine
 * records its object as progressing, the queue looks again). A rejection fails the request with that error, unsent.
 */
export type WriteGate = () => Promise<Progress | undefined>;

/** A connection that breaks before any answer may be retried for these: repeating them changes nothing. */
const idempotentMethods = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
/** A 5xx from these is retried: repeating them changes nothing (a POST or PATCH never is: it may have been applied). */
const serverErrorRetried = new Set([500, 502, 503, 504]);
/** The longest wait a server may ask for with Retry-After before the call gives up instead. */
const maxRetryAfterMs = 60_000;

/**
 * HTTP for the OpenStack APIs: timeouts, retries with jittered backoff (lib/retry.ts), typed errors, counters.
 * What is retried here: any method after a 429 (the service refused it before doing anything), idempotent
 * methods after a 5xx, a broken connection or a cut answer. A POST that may have reached the service is
 * never repeated here: the caller decides (a create looks its ownership marker up first, agent/act/execute.ts).
 */
export class Transport {
  private readonly dispatcher: Dispatcher;
  private readonly options: Required<Pick<TransportOptions, 'timeoutMs' | 'retries'>> & TransportOptions;
  /** Awaited in order before each write (gated): the outer caller's first. */
  private readonly gates: readonly WriteGate[];

  /** `from`: the transport a gated one shares its connections with (gated), and the gates it adds. */
  constructor(options: TransportOptions, from?: { dispatcher: Dispatcher; gates: readonly WriteGate[] }) {
    this.options = { timeoutMs: 60_000, retries: 3, ...options };
    this.gates = from?.gates ?? [];
    // The call's AbortSignal is its only deadline: undici's own 300 s header and body timeouts would cut
    // a bulk POST whose timeout was scaled past them (a busy Neutron took over 300 s for 100 subnets).
    this.dispatcher =
      from?.dispatcher ??
      new Agent({
        headersTimeout: 0,
        bodyTimeout: 0,
        connect: { rejectUnauthorized: options.verify, ...(options.cacert ? { ca: readFileSync(options.cacert) } : {}) },
      });
  }

  /** The same transport (connections, counters, timeouts), each write of it waiting for `gate` after the gates it has. */
  gated(gate: WriteGate): Transport {
    return new Transport(this.options, { dispatcher: this.dispatcher, gates: [...this.gates, gate] });
  }

  get counters(): ApiCounters {
    return this.options.counters;
  }

  /** A call's timeout unless it asks for another (a bulk POST scales it with its size). */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  async send(req: HttpRequest): Promise<HttpResponse> {
    // A token request writes nothing in the cloud: it does not wait. The gates come after the token, the first-call
    // wait and any queue, so a process killed while waiting leaves no journal line for a request it never sent.
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.countAs !== 'AUTH') await this.passGates();
    // A streamed body (an image upload) is consumed by the first attempt: it cannot be sent again.
    const repeatable = (idempotentMethods.has(req.method) || req.retryable === true) && !(req.body && !(req.body instanceof Uint8Array));
    return retry(
      async () => {
        let res: HttpResponse;
        try {
          res = await this.once(req);
        } catch (err) {
          if (req.signal?.aborted) throw err;
          throw new OpenStackError(
            {
              status: 0,
              service: req.service,
              method: req.method,
              path: pathOf(req.url),
              detail: networkDetail(err),
              timedOut: err instanceof Error && err.name === 'TimeoutError',
            },
            { cause: err },
          );
        }
        if (res.status === 429 || (repeatable && serverErrorRetried.has(res.status))) throw new RetriableAnswer(res, toError(req, res));
        return res;
      },
      {
        retries: this.options.retries,
        baseMs: 200,
        maxMs: 5_000,
        retryable: (err) => {
          if (err instanceof RetriableAnswer) return err.res.status === 429 || repeatable;
          return err instanceof OpenStackError && err.status === 0 && repeatable;
        },
        delayHint: (err) => (err instanceof RetriableAnswer ? retryAfterMs(err.res.headers.get('retry-after'), err.error.detail) : undefined),
        signal: req.signal,
      },
    ).catch((err: unknown) => {
      // Out of retries on an answer: hand the answer back, the caller's status check makes the typed error.
      if (err instanceof RetriableAnswer) return err.res;
      throw err;
    });
  }

  /** Each gate in turn: a hold stops the write here, unsent; so does a gate's failure (not a network failure: not retried). */
  private async passGates(): Promise<void> {
    for (const gate of this.gates) {
      const held = await gate();
      if (held) throw new WriteHeld(held);
    }
  }

  private async once(req: HttpRequest): Promise<HttpResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
    const init: RequestInit = { method: req.method, headers };
    if (req.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(req.json);
    } else if (req.body) {
      init.body = req.body as RequestInit['body'];
      init.duplex = 'half';
    }
    const timeout = AbortSignal.timeout(req.timeoutMs ?? this.options.timeoutMs);
    init.signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    init.dispatcher = this.dispatcher;
    let status = 0;
    this.options.counters.sending(req.service, req.countAs ?? req.method);
    try {
      const res = await fetch(req.url, init);
      const text = req.method === 'HEAD' ? '' : await res.text();
      const out: HttpResponse = { status: res.status, headers: res.headers, text };
      if (text && (res.headers.get('content-type') ?? '').includes('json')) {
        try {
          out.json = JSON.parse(text);
        } catch (err) {
          // A body cut short by a proxy or a dying service: the answer is lost, as if the connection had broken.
          if (res.status < 300) throw new Error(`the ${res.status} answer is not valid JSON (${text.length} bytes, cut short?)`, { cause: err });
        }
      }
      status = res.status;
      return out;
    } finally {
      this.options.counters.record(req.service, req.countAs ?? req.method, status);
    }
  }
}

/** A 429 or 5xx worth another try, carried through lib/retry.ts. */
class RetriableAnswer extends Error {
  readonly res: HttpResponse;
  readonly error: OpenStackError;
  constructor(res: HttpResponse, error: OpenStackError) {
    super(error.message);
    this.res = res;
    this.error = error;
  }
}

/** The wait a service asked for: Retry-After in seconds or as an HTTP date, or "retry after N" in the message (Nova's 429). */
export function retryAfterMs(header: string | null, detail = '', now = Date.now()): number | undefined {
  let ms: number | undefined;
  if (header !== null && header.trim() !== '') {
    const seconds = Number(header.trim());
    if (Number.isFinite(seconds) && seconds >= 0) ms = seconds * 1000;
    else {
      const at = Date.parse(header);
      if (Number.isFinite(at)) ms = Math.max(0, at - now);
    }
  }
  if (ms === undefined) {
    const n = Number(/retry after (\d+)/i.exec(detail)?.[1]);
    if (Number.isFinite(n) && n > 0) ms = n * 1000;
  }
  return ms === undefined ? undefined : Math.min(ms, maxRetryAfterMs);
}

/** Throws the typed error unless the status is one of `ok`. */
export function expectStatus(req: Pick<HttpRequest, 'service' | 'method' | 'url'>, res: HttpResponse, ok: number[]): HttpResponse {
  if (!ok.includes(res.status)) throw toError(req, res);
  return res;
}

export function toError(req: Pick<HttpRequest, 'service' | 'method' | 'url'>, res: HttpResponse): OpenStackError {
  const requestId = res.headers.get('x-openstack-request-id') ?? res.headers.get('x-compute-request-id') ?? undefined;
  return new OpenStackError({ status: res.status, service: req.service, method: req.method, path: pathOf(req.url), requestId, detail: errorDetail(res.text) });
}

/** The path and query of a URL: never the host's credentials, never a token. */
export function pathOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.pathname}${u.search}`;
  } catch {
    return url;
  }
}

function networkDetail(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (err.name === 'TimeoutError') return 'timed out';
    return cause?.code ? `${cause.code}${cause.message ? `: ${cause.message}` : ''}` : err.message;
  }
  return String(err);
}
