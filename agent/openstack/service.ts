import { OpenStackError } from './errors.ts';
import type { Scope, Session, Token } from './session.ts';
import { expectStatus, toError, type HttpRequest } from './transport.ts';

export type ServiceType = 'identity' | 'compute' | 'network' | 'image' | 'volumev3' | 'load-balancer';

/** The API version path a catalog endpoint may lack. */
const versionPrefix: Record<ServiceType, string> = { identity: '', compute: '', network: '/v2.0', image: '/v2', volumev3: '', 'load-balancer': '/v2' };

export interface CallOptions {
  query?: Record<string, string | number | boolean | undefined | string[]>;
  json?: unknown;
  body?: Uint8Array | NodeJS.ReadableStream;
  headers?: Record<string, string>;
  ok?: number[];
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface CallResult<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** One OpenStack service as seen from one scope: paths in, parsed JSON and typed errors out. */
export class ServiceClient {
  readonly session: Session;
  readonly scope: Scope;
  readonly service: ServiceType;
  private readonly headers: Record<string, string>;

  constructor(session: Session, scope: Scope, service: ServiceType, headers: Record<string, string> = {}) {
    this.session = session;
    this.scope = scope;
    this.service = service;
    this.headers = headers;
  }

  async base(): Promise<string> {
    return this.baseOf(await this.session.token(this.scope));
  }

  private baseOf(token: Token): string {
    const root = this.session.endpoint(token, this.service);
    const prefix = versionPrefix[this.service];
    return prefix && !root.endsWith(prefix) ? `${root}${prefix}` : root;
  }

  async call<T = unknown>(method: HttpRequest['method'], path: string, options: CallOptions = {}): Promise<CallResult<T>> {
    const url = (token: Token): string => (/^https?:/.test(path) ? path : `${this.baseOf(token)}${path}${queryString(options.query)}`);
    const res = await this.session.send(this.scope, {
      service: this.service,
      method,
      url,
      headers: { ...this.headers, ...options.headers },
      json: options.json,
      body: options.body,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    this.session.counters.recordCollection(this.service, method, collectionOf(path, await this.base()));
    const ok = options.ok ?? [200, 201, 202, 204];
    const where = { service: this.service, method, url: `${path}${queryString(options.query)}` };
    expectStatus(where, res, ok);
    return { status: res.status, body: res.json as T, headers: res.headers };
  }

  async get<T>(path: string, query?: CallOptions['query']): Promise<T> {
    return (await this.call<T>('GET', path, { query })).body;
  }

  /** GET that answers undefined for a 404 instead of throwing. */
  async find<T>(path: string, query?: CallOptions['query']): Promise<T | undefined> {
    const r = await this.call<T>('GET', path, { query, ok: [200, 404] });
    return r.status === 404 ? undefined : r.body;
  }

  async post<T>(path: string, json: unknown, ok?: number[]): Promise<T> {
    return (await this.call<T>('POST', path, { json, ok })).body;
  }

  async put<T>(path: string, json?: unknown, ok?: number[]): Promise<T> {
    return (await this.call<T>('PUT', path, { json, ok })).body;
  }

  /** DELETE that treats "already gone" as done. */
  async remove(path: string): Promise<void> {
    await this.call('DELETE', path, { ok: [200, 202, 204, 404] });
  }

  /** Every item of a collection, following the service's pagination links. */
  async list<T>(path: string, key: string, query?: CallOptions['query']): Promise<T[]> {
    const items: T[] = [];
    for await (const batch of this.pages<T>(path, key, query)) items.push(...batch);
    return items;
  }

  /**
   * A collection one page at a time, so a cloud-wide list keeps only what the
   * caller keeps of each page (pass the service's `limit` to get pages at all).
   */
  async *pages<T>(path: string, key: string, query?: CallOptions['query']): AsyncGenerator<T[]> {
    let next: string | undefined = `${path}${queryString(query)}`;
    for (let page = 0; next; page++) {
      if (page > 10_000) throw new OpenStackError({ status: 0, service: this.service, method: 'GET', path, detail: 'pagination does not end' });
      const body: Record<string, unknown> = await this.get<Record<string, unknown>>(next);
      const batch = body[key];
      if (!Array.isArray(batch))
        throw toError({ service: this.service, method: 'GET', url: path }, { status: 200, headers: new Headers(), text: `no "${key}" list in the answer` });
      next = nextLink(body, key, await this.base());
      yield batch as T[];
    }
  }
}

function nextLink(body: Record<string, unknown>, key: string, base: string): string | undefined {
  const links = body[`${key}_links`];
  if (Array.isArray(links)) {
    const href = (links as { rel?: string; href?: string }[]).find((l) => l.rel === 'next')?.href;
    if (href) return href;
  }
  if (typeof body.next === 'string' && body.next) {
    // Glance gives a path from the API root ("/v2/images?marker=…").
    const root = new URL(base);
    return `${root.origin}${body.next}`;
  }
  return undefined;
}

function queryString(query: CallOptions['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) params.set(k, v.join(','));
    else params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** `/ports?…`, `/routers/ID/add_router_interface`, a full next link → `/ports`, `/routers`: what a call is counted under. */
function collectionOf(path: string, base: string): string {
  const rel = /^https?:/.test(path) ? new URL(path).pathname.slice(new URL(base).pathname.replace(/\/$/, '').length) : path;
  const first = rel
    .split('?')[0]!
    .split('/')
    .find((x) => x !== '');
  return first ? `/${first}` : '/';
}
