import { KupenstackError } from '../errors.ts';
import type { Progress } from '../../lib/progress.ts';

/** A bad or missing clouds.yaml entry: says which file and what to change. Never carries a secret. */
export class CloudConfigError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('cloud.config', message, options);
  }
}

/**
 * An OpenStack API call that failed: which service and call, the HTTP status,
 * the service's own message and the request id to quote to the cloud's operators.
 */
export class OpenStackError extends KupenstackError {
  readonly status: number;
  readonly service: string;
  readonly method: string;
  readonly path: string;
  readonly requestId: string | undefined;
  readonly detail: string;
  /** No answer within the client's timeout: unlike a closed connection, the service may still be working on the request. */
  readonly timedOut: boolean;

  constructor(
    init: { status: number; service: string; method: string; path: string; requestId?: string | undefined; detail: string; timedOut?: boolean },
    options?: { cause?: unknown },
  ) {
    const rid = init.requestId ? ` (request ${init.requestId})` : '';
    super(openstackCode(init.status), `${init.service} ${init.method} ${init.path} answered ${init.status || 'no response'}${rid}: ${init.detail}`, options);
    this.status = init.status;
    this.service = init.service;
    this.method = init.method;
    this.path = init.path;
    this.requestId = init.requestId;
    this.detail = init.detail;
    this.timedOut = init.timedOut === true;
  }

  get notFound(): boolean {
    return this.status === 404;
  }

  get conflict(): boolean {
    return this.status === 409;
  }

  /** Worth retrying later: the cloud is busy, over quota or briefly unreachable. A bad request is not. */
  get transient(): boolean {
    return this.status === 0 || this.status === 408 || this.status === 409 || this.status === 429 || this.status >= 500 || this.quotaExceeded;
  }

  get quotaExceeded(): boolean {
    return (this.status === 403 || this.status === 409 || this.status === 413) && /quota/i.test(this.detail);
  }
}

function openstackCode(status: number): string {
  if (status === 0) return 'openstack.unreachable';
  if (status === 401) return 'openstack.unauthorized';
  if (status === 403) return 'openstack.forbidden';
  if (status === 404) return 'openstack.not-found';
  if (status === 409) return 'openstack.conflict';
  if (status >= 500) return 'openstack.server-error';
  return 'openstack.request';
}

/** The human part of an OpenStack error body, whatever the service's envelope. */
export function errorDetail(body: string): string {
  try {
    const parsed = JSON.parse(body) as unknown;
    const found = findMessage(parsed, 0);
    if (found) return found;
  } catch {
    // Not JSON: Glance and some proxies answer with text or HTML.
  }
  const text = body
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > 300 ? `${text.slice(0, 297)}...` : text || 'no details';
}

function findMessage(value: unknown, depth: number): string | undefined {
  if (depth > 3 || value === null || typeof value !== 'object') return undefined;
  const record = value as Record<string, unknown>;
  for (const key of ['message', 'detail', 'title', 'description']) {
    const v = record[key];
    if (typeof v === 'string' && v) return v;
  }
  for (const v of Object.values(record)) {
    const found = findMessage(v, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * A write the client's gate held (openstack/transport.ts WriteGate): nothing was sent. An error of the
 * call, since the call did not happen; the engine reads its progress as "progressing, look again", never
 * as a failure of the object.
 */
export class WriteHeld extends KupenstackError {
  readonly progress: Progress;
  constructor(progress: Progress) {
    super('openstack.write-held', `write held, not sent: ${progress.reason}; looked at again in ${Math.ceil(progress.afterMs / 1000)} s`);
    this.progress = progress;
  }
}
