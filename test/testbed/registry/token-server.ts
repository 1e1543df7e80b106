// Test-bed peer (not product code): a minimal Docker registry token server
// (distribution's token auth spec) for the Bearer-auth registry on 5052.
// Issues ES256 JWTs signed with the key whose certificate the registry trusts
// (rootcertbundle). Credentials: TOKEN_USER / TOKEN_PASSWORD (Basic on GET, or
// OAuth2 POST grant_type=password|refresh_token). Anonymous requests get a
// token with no access, so the registry answers 401 insufficient_scope.
// GET /stats answers what was issued (tests check scope upgrades).
import { createHash, createPrivateKey, createPublicKey, randomUUID, sign, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const port = Number(process.env.TOKEN_PORT ?? '5053');
const keyFile = process.env.TOKEN_KEY ?? '';
const issuer = process.env.TOKEN_ISSUER ?? 'kupenstack-testbed-tokens';
const service = process.env.TOKEN_SERVICE ?? 'kupenstack-testbed';
const user = process.env.TOKEN_USER ?? 'kupenstack';
const password = process.env.TOKEN_PASSWORD ?? '';
const refreshToken = process.env.TOKEN_REFRESH ?? '';
const lifetime = Number(process.env.TOKEN_LIFETIME ?? '300');

const privateKey = createPrivateKey(readFileSync(keyFile));
const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });

/** libtrust key id: base32(sha256(DER SPKI)[:30]) in groups of 4 joined by ':' (what distribution 2.8 looks up). */
function libtrustKeyId(der: Buffer): string {
  const bytes = createHash('sha256').update(der).digest().subarray(0, 30);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out.match(/.{1,4}/g)!.join(':');
}
const kid = libtrustKeyId(spki);

const b64url = (v: Buffer | string): string => Buffer.from(v).toString('base64url');

interface Access {
  type: string;
  name: string;
  actions: string[];
}

function jwt(subject: string, access: Access[]): string {
  const now = Math.floor(Date.now() / 1000);
  const header = b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid }));
  const claims = b64url(JSON.stringify({ iss: issuer, sub: subject, aud: service, exp: now + lifetime, nbf: now - 10, iat: now, jti: randomUUID(), access }));
  const signature = sign('sha256', Buffer.from(`${header}.${claims}`), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return `${header}.${claims}.${b64url(signature)}`;
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `repository:vm/a:pull,push` → access entry (every requested action is granted to the test user). */
function parseScope(scope: string): Access | undefined {
  const first = scope.indexOf(':');
  const last = scope.lastIndexOf(':');
  if (first <= 0 || last <= first) return undefined;
  return { type: scope.slice(0, first), name: scope.slice(first + 1, last), actions: scope.slice(last + 1).split(',').filter(Boolean) };
}

const issued: Array<{ subject: string; scopes: string[] }> = [];

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function issue(res: ServerResponse, subject: string | undefined, scopes: string[]): void {
  const access = subject ? scopes.map(parseScope).filter((a): a is Access => a !== undefined) : [];
  issued.push({ subject: subject ?? '', scopes });
  const token = jwt(subject ?? '', access);
  answer(res, 200, { token, access_token: token, expires_in: lifetime, issued_at: new Date().toISOString() });
}

async function readBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += String(c);
  return s;
}

createServer((req, res) => {
  void (async () => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    if (url.pathname === '/stats') return answer(res, 200, { issued });
    if (url.pathname !== '/token') return answer(res, 404, { error: 'not found' });
    if (req.method === 'GET') {
      const auth = req.headers.authorization;
      let subject: string | undefined;
      if (auth) {
        const m = /^Basic (.+)$/.exec(auth);
        const decoded = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : '';
        const colon = decoded.indexOf(':');
        if (colon < 0 || !equal(decoded.slice(0, colon), user) || !equal(decoded.slice(colon + 1), password)) {
          return answer(res, 401, { errors: [{ code: 'UNAUTHORIZED', message: 'invalid credentials' }] });
        }
        subject = user;
      }
      return issue(res, subject, url.searchParams.getAll('scope'));
    }
    if (req.method === 'POST') {
      const form = new URLSearchParams(await readBody(req));
      const grant = form.get('grant_type');
      const ok =
        (grant === 'password' && equal(form.get('username') ?? '', user) && equal(form.get('password') ?? '', password)) ||
        (grant === 'refresh_token' && refreshToken !== '' && equal(form.get('refresh_token') ?? '', refreshToken));
      if (!ok) return answer(res, 401, { error: 'invalid_grant' });
      return issue(res, user, (form.get('scope') ?? '').split(' ').filter(Boolean));
    }
    return answer(res, 405, { error: 'method not allowed' });
  })().catch((err: unknown) => answer(res, 500, { error: String(err) }));
}).listen(port, '127.0.0.1', () => {
  process.stdout.write(`token server on http://127.0.0.1:${port}/token (kid ${kid})\n`);
});
