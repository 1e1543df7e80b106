import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, fetch, type Dispatcher, type RequestInit } from 'undici';
import type { ApiCounters } from './counters.ts';
import { errorDetail, OpenStackError } from './errors.ts';

export interface TransportOptions {
  counters: ApiCounters;
  /** TLS verification; off only when the cloud config says so explicitly. */
  verify: boolean;
  cacert?: string;
  timeoutMs?: number;
  /** Retries of safe requests (GET, HEAD) after a network error, 429 or 5xx, and of PUT/DELETE after a network error. */
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
}

const safeMethods = new Set(['GET', 'HEAD']);
/** A connection that breaks before any answer may be retried for these: repeating them changes nothing. */
const idempotentMethods = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

/** HTTP for the OpenStack APIs: timeouts, retries of safe calls with jittered backoff, typed errors, counters. */
export class Transport {
  private readonly dispatcher: Dispatcher | undefined;
  private readonly options: Required<Pick<TransportOptions, 'timeoutMs' | 'retries'>> & TransportOptions;

  constructor(options: TransportOptions) {
    this.options = { timeoutMs: 60_000, retries: 3, ...options };
    if (!options.verify || options.cacert) {
      this.dispatcher = new Agent({ connect: { rejectUnauthorized: options.verify, ...(options.cacert ? { ca: readFileSync(options.cacert) } : {}) } });
    }
  }

  get counters(): ApiCounters {
    return this.options.counters;
  }

  async send(req: HttpRequest): Promise<HttpResponse> {
    const attempts = idempotentMethods.has(req.method) || req.retryable ? this.options.retries + 1 : 1;
    let last: OpenStackError | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await sleep(backoff(attempt, last), undefined, { signal: req.signal });
      try {
        const res = await this.once(req);
        if ((res.status === 429 || res.status >= 500) && safeMethods.has(req.method) && attempt + 1 < attempts) {
          last = toError(req, res);
          continue;
        }
        return res;
      } catch (err) {
        if (req.signal?.aborted) throw err;
        last = new OpenStackError({ status: 0, service: req.service, method: req.method, path: pathOf(req.url), detail: networkDetail(err) }, { cause: err });
        if (attempt + 1 >= attempts) throw last;
      }
    }
    throw last ?? new Error('unreachable');
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
    if (this.dispatcher) init.dispatcher = this.dispatcher;
    let status = 0;
    try {
      const res = await fetch(req.url, init);
      status = res.status;
      return { status: res.status, headers: res.headers as unknown as Headers, text: req.method === 'HEAD' ? '' : await res.text() };
    } finally {
      this.options.counters.record(req.service, req.countAs ?? req.method, status);
    }
  }
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

function backoff(attempt: number, last: OpenStackError | undefined): number {
  const retryAfter = Number(/retry after (\d+)/i.exec(last?.detail ?? '')?.[1]);
  const base = Math.min(200 * 2 ** (attempt - 1), 5_000);
  const jittered = base / 2 + Math.random() * base;
  return Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, 30_000) : jittered;
}

function networkDetail(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    if (err.name === 'TimeoutError') return 'timed out';
    return cause?.code ? `${cause.code}${cause.message ? `: ${cause.message}` : ''}` : err.message;
  }
  return String(err);
}
