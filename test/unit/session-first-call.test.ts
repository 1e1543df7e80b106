import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../agent/openstack/service.ts';
import { Session } from '../../agent/openstack/session.ts';

/**
 * A service validates a token it has not seen once per worker, but every call of a burst with a new
 * token validates it again (keystonemiddleware has no single flight): the first call with a token goes
 * alone, the others follow its answer, or a bounded wait when it is slow itself. A loopback server plays
 * Keystone and a service, and records what was in flight when each call arrived.
 */
let server: Server;
let base: string;
let tokens = 0;
/** Per arrival: the path, the token and how many calls with that token were in flight before it. */
const arrivals: { path: string; token: string; inFlight: number }[] = [];
const inFlight = new Map<string, number>();
const delayOf = (req: IncomingMessage): number => Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.method === 'POST' && req.url === '/v3/auth/tokens') {
      tokens++;
      const catalog = [{ type: 'network', endpoints: [{ interface: 'public', url: `${base}/network` }] }];
      res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': `token-${tokens}` });
      res.end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString(), user: { id: 'u' }, catalog } }));
      return;
    }
    const token = String(req.headers['x-auth-token']);
    arrivals.push({ path: new URL(req.url ?? '/', 'http://x').pathname, token, inFlight: inFlight.get(token) ?? 0 });
    inFlight.set(token, (inFlight.get(token) ?? 0) + 1);
    setTimeout(() => {
      inFlight.set(token, inFlight.get(token)! - 1);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    }, delayOf(req));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function client(): ServiceClient {
  const session = new Session({ name: 'unit', file: 'clouds.yaml', authUrl: `${base}/v3`, credentials: { type: 'password', username: 'u', password: 'p' }, interface: 'public', verify: true });
  return new ServiceClient(session, { default: true }, 'network');
}

describe('the first call with a new token', () => {
  it('goes alone: the burst behind it starts after its answer', async () => {
    arrivals.length = 0;
    const network = client();
    await Promise.all(Array.from({ length: 6 }, (_, i) => network.get(`/burst-${i}`, { delay: 150 })));
    const mine = arrivals.filter((a) => a.path.includes('/burst-'));
    expect(mine).toHaveLength(6);
    expect(new Set(mine.map((a) => a.token)).size).toBe(1);
    // The first arrived alone, the five others once it had been answered, together.
    expect(mine[0]!.inFlight).toBe(0);
    expect(mine.slice(1).map((a) => a.inFlight)).toEqual([0, 1, 2, 3, 4]);
  });

  it('holds the others back only for a bounded time when the first call is slow itself', async () => {
    arrivals.length = 0;
    const network = client();
    const started = Date.now();
    const first = network.get('/slow-first', { delay: 4000 });
    const others = await Promise.all(
      Array.from({ length: 3 }, async (_, i) => {
        await network.get(`/after-${i}`);
        return Date.now() - started;
      }),
    );
    await first;
    // They waited (the bounded wait is 1 s), then went while the first was still running.
    expect(Math.min(...others)).toBeGreaterThanOrEqual(900);
    const after = arrivals.filter((a) => a.path.includes('/after-'));
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((a) => a.inFlight >= 1)).toBe(true);
  });

  it('is per token: a new token waits again, a known one never does', async () => {
    arrivals.length = 0;
    const a = client();
    await a.get('/warm', { delay: 10 });
    await Promise.all(Array.from({ length: 3 }, (_, i) => a.get(`/known-${i}`, { delay: 100 })));
    const known = arrivals.filter((x) => x.path.includes('/known-'));
    // A token the service has seen: the three go at once.
    expect(known.map((x) => x.inFlight)).toEqual([0, 1, 2]);
    const b = client();
    await Promise.all(Array.from({ length: 3 }, (_, i) => b.get(`/fresh-${i}`, { delay: 100 })));
    const fresh = arrivals.filter((x) => x.path.includes('/fresh-'));
    expect(fresh[0]!.token).not.toBe(known[0]!.token);
    expect(fresh.map((x) => x.inFlight)).toEqual([0, 0, 1]);
  });
});
