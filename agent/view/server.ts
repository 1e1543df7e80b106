import { readFileSync } from 'node:fs';
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../telemetry/logger.ts';
import type { LoginRequest, WhoAmI } from './api.ts';
import { checkCsrf, readJson, sendError, sendJson, sessionCookieHeader, sessionIdOf } from './http.ts';
import type { PersonView, ViewBackend } from './reader.ts';
import { SessionStore } from './sessions.ts';
import { serveStatic } from './static-files.ts';
import type { Identity } from './user-client.ts';
import { ViewError, viewErrorOf } from './view-error.ts';

/** Where the view listens and what it serves (the --view-* flags). */
export interface ViewPlace {
  listen: { host: string; port: number };
  /** The UI's built files (dist/view/). */
  staticDir: string;
  /** Serve HTTPS with this certificate and key (files); without it, put TLS in front (the cookie is Secure behind an https proxy). */
  tls?: { cert: string; key: string };
}

export interface ViewSettings extends ViewPlace {
  backend: ViewBackend;
  logger: Logger;
  sessions?: SessionStore;
}

export interface ViewServer {
  address: AddressInfo;
  server: Server;
  sessions: SessionStore;
  close(): Promise<void>;
}

/** The person behind a request: the session's, the loopback view's, or a 401. */
function personOf(req: IncomingMessage, sessions: SessionStore, backend: ViewBackend): { who: Identity; view: PersonView } {
  const s = sessions.get(sessionIdOf(req));
  if (s) return s;
  if (backend.anonymous) return backend.anonymous;
  throw new ViewError(401, 'sign in first: POST /api/login with a bearer token');
}

function secureRequest(req: IncomingMessage): boolean {
  return (req.socket as TLSSocket).encrypted === true || req.headers['x-forwarded-proto'] === 'https';
}

async function login(req: IncomingMessage, res: ServerResponse, o: ViewSettings, sessions: SessionStore): Promise<void> {
  checkCsrf(req);
  const body = (await readJson(req)) as Partial<LoginRequest> | null;
  const token = typeof body?.token === 'string' ? body.token.trim().replace(/^Bearer\s+/i, '') : '';
  if (!token) throw new ViewError(400, 'give a bearer token: {"token": "…"} (kubectl create token <serviceaccount>, or an OIDC ID token)');
  const { who, view } = await o.backend.signIn(token);
  const s = sessions.open(who, view);
  const me: WhoAmI = { ...who, mode: 'token', server: o.backend.server };
  res.setHeader('set-cookie', sessionCookieHeader(s.id, secureRequest(req), Math.floor((s.expiresAt - Date.now()) / 1000)));
  o.logger.info({ user: who.username }, 'view: signed in');
  sendJson(res, 200, me);
}

const objectPath = /^\/api\/namespaces\/([^/]+)\/([^/]+)\/([^/]+)$/;

/** The read routes of api.ts, each answered from the person's reader. */
async function read(
  p: { who: Identity; view: PersonView },
  path: string,
  q: URLSearchParams,
  server: ViewBackend['server'],
  sessionless: boolean,
): Promise<unknown> {
  const r = p.view.reader;
  const seg = (i: number, m: RegExpExecArray | null): string => decodeURIComponent(m![i]!);
  let m: RegExpExecArray | null;
  if (path === '/api/whoami') return { ...p.who, mode: sessionless ? 'loopback' : 'token', server } satisfies WhoAmI;
  if (path === '/api/overview') return r.overview();
  if ((m = /^\/api\/syncs\/([^/]+)\/plan$/.exec(path))) return r.plan(seg(1, m));
  if ((m = /^\/api\/syncs\/([^/]+)$/.exec(path))) return r.sync(seg(1, m));
  if ((m = /^\/api\/namespaces\/([^/]+)\/syncs\/([^/]+)\/plan$/.exec(path))) return r.plan(seg(2, m), seg(1, m));
  if ((m = /^\/api\/namespaces\/([^/]+)\/syncs\/([^/]+)$/.exec(path))) return r.sync(seg(2, m), seg(1, m));
  if ((m = /^\/api\/namespaces\/([^/]+)$/.exec(path))) return r.namespace(seg(1, m));
  if ((m = objectPath.exec(path))) return r.object(seg(1, m), seg(2, m), seg(3, m));
  if (path === '/api/images') return r.images(q.get('namespace') ?? undefined);
  if (path === '/api/clouds') return r.clouds();
  if ((m = /^\/api\/clouds\/([^/]+)$/.exec(path))) return r.cloud(seg(1, m));
  throw new ViewError(404, `no such route: ${path}`);
}

async function api(req: IncomingMessage, res: ServerResponse, url: URL, o: ViewSettings, sessions: SessionStore): Promise<void> {
  const path = url.pathname;
  if (req.method === 'POST' && path === '/api/login') return login(req, res, o, sessions);
  if (req.method === 'POST' && path === '/api/logout') {
    checkCsrf(req);
    sessions.close(sessionIdOf(req));
    res.setHeader('set-cookie', sessionCookieHeader('', secureRequest(req), 0));
    res.writeHead(204).end();
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') throw new ViewError(405, `${req.method} ${path}: the view is read-only`);
  const p = personOf(req, sessions, o.backend);
  const sessionless = sessions.get(sessionIdOf(req)) === undefined;
  if (path === '/api/events') {
    const scopes = (url.searchParams.get('scope') ?? '').split(',').filter((s) => s !== '');
    if (scopes.length === 0) throw new ViewError(400, 'give ?scope=overview (or sync:<name>, namespace:<ns>, images, cloud:<name>)');
    return p.view.events(req, res, scopes);
  }
  sendJson(res, 200, await read(p, path, url.searchParams, o.backend.server, sessionless));
}

/**
 * The web view's HTTP server (issue 52): the JSON API of api.ts under
 * /api/ and the UI's files for every other path. Reads only: the one POSTs
 * sign in and out. Requests are logged by method, path and status: never a
 * header, a cookie or a body (a token stays in memory, in its session's client).
 */
export async function serveView(o: ViewSettings): Promise<ViewServer> {
  const sessions = o.sessions ?? new SessionStore();
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://view.invalid');
    const done = url.pathname.startsWith('/api/') ? api(req, res, url, o, sessions) : serveStatic(o.staticDir, res, url.pathname);
    done
      .catch((err: unknown) => {
        const e = viewErrorOf(`${req.method} ${url.pathname}`, err);
        if (e.status >= 500) o.logger.warn({ path: url.pathname, status: e.status, err: e.message }, 'view: request failed');
        if (res.headersSent) res.end();
        else sendError(res, e);
      })
      .finally(() => o.logger.debug({ method: req.method, path: url.pathname, status: res.statusCode }, 'view: request'));
  };
  const server = o.tls ? createHttps({ cert: readFileSync(o.tls.cert), key: readFileSync(o.tls.key) }, handler) : createHttp(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.listen.port, o.listen.host, () => resolve());
  });
  return {
    address: server.address() as AddressInfo,
    server,
    sessions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
