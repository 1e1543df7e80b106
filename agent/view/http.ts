import type { IncomingMessage, ServerResponse } from 'node:http';
import { csrfHeader, sessionCookie } from './api.ts';
import { ViewError } from './view-error.ts';

/** Small HTTP pieces of the view server: JSON answers, the session cookie, the CSRF check, a bounded body. */

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendError(res: ServerResponse, err: ViewError): void {
  sendJson(res, err.status, err.body());
}

/** The session id from the Cookie header. */
export function sessionIdOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === sessionCookie) return v.join('=');
  }
  return undefined;
}

/** HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Secure when the view is served over TLS. */
export function sessionCookieHeader(id: string, secure: boolean, maxAgeS: number): string {
  return `${sessionCookie}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

/**
 * A state-changing request (login, logout) must carry the view's header,
 * which a cross-site form or image cannot set, and, when the browser names
 * an Origin, come from the view's own host.
 */
export function checkCsrf(req: IncomingMessage): void {
  if (req.headers[csrfHeader] === undefined) throw new ViewError(403, `missing the ${csrfHeader} header`, { code: 'csrf' });
  const origin = req.headers.origin;
  if (origin === undefined || origin === 'null') {
    if (origin === 'null') throw new ViewError(403, 'a request from an opaque origin', { code: 'csrf' });
    return;
  }
  let host: string;
  try {
    host = new URL(origin).host;
  } catch (cause) {
    throw new ViewError(403, 'the Origin header is not a URL', { code: 'csrf', cause });
  }
  const own = req.headers['x-forwarded-host'] ?? req.headers.host;
  if (host !== own) throw new ViewError(403, `a request from another origin (${origin})`, { code: 'csrf' });
}

/** The request's JSON body, at most 64 KiB (a token is a few KiB). */
export async function readJson(req: IncomingMessage, limit = 64 * 1024): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new ViewError(413, `the request body is over ${limit} bytes`, { code: 'too-large' });
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (cause) {
    throw new ViewError(400, 'the request body is not JSON', { cause });
  }
}
