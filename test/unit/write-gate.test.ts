import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journaled } from '../../agent/act/journaled.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { CreateJournal } from '../../agent/status/create-journal.ts';
import { OpenStackError, WriteHeld } from '../../agent/openstack/errors.ts';
import type { Progress } from '../../lib/progress.ts';

/**
 * A write gate is an argument of the client (OpenStackCloud.gated), not a hook found at run time: each write
 * of a gated cloud waits for its gates, outer first, after the token; reads and token requests do not; a hold
 * or a failing gate leaves nothing sent. The create journal rides on it: its line is stored before the POST
 * leaves. A loopback server plays Keystone and Neutron and records, in one log, what arrived when.
 */
let server: Server;
let base: string;
const log: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'POST' && path === '/v3/auth/tokens') {
      log.push('token');
      const catalog = [{ type: 'network', endpoints: [{ interface: 'public', url: `${base}/network` }] }];
      res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': 'token' });
      res.end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString(), user: { id: 'u' }, catalog } }));
      return;
    }
    log.push(`${req.method} ${path}`);
    // A gateway that lost the service's answer, a service that refused, one that dropped the connection.
    if (path.endsWith('/gateway-lost')) return void res.writeHead(504, { 'content-type': 'application/json' }).end('{}');
    if (path.endsWith('/refused')) return void res.writeHead(409, { 'content-type': 'application/json' }).end('{}');
    if (path.endsWith('/dropped')) return void res.socket?.destroy();
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' }).end('{"networks":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const cloud = (): OpenStackCloud =>
  new OpenStackCloud({ name: 'unit', file: 'clouds.yaml', authUrl: `${base}/v3`, credentials: { type: 'password', username: 'u', password: 'p' }, interface: 'public', verify: true });

/** A gate that notes when it is asked in the shared log, then lets the write go after a turn. */
const noting = (name: string): (() => Promise<undefined>) => async () => {
  log.push(`gate ${name}`);
  await new Promise((r) => setTimeout(r, 5));
  return undefined;
};

describe('a gated cloud', () => {
  it('sends each write after its gates, outer first, and reads and tokens without them', async () => {
    log.length = 0;
    const plain = cloud();
    const gated = plain.gated(noting('outer')).gated(noting('inner'));
    await gated.client('network').get('/networks');
    await gated.client('network').post('/networks', { network: { name: 'a' } });
    expect(log).toEqual(['token', 'GET /network/v2.0/networks', 'gate outer', 'gate inner', 'POST /network/v2.0/networks']);
    // The cloud it gates is untouched, and shares its token and what is kept per cloud.
    log.length = 0;
    await plain.client('network').post('/networks', { network: { name: 'b' } });
    expect(log).toEqual(['POST /network/v2.0/networks']);
    expect(gated.base).toBe(plain);
    expect(gated.gated(noting('third')).base).toBe(plain);
  });

  it('sends nothing while a gate holds: the write fails with WriteHeld carrying the hold', async () => {
    log.length = 0;
    let asked = 0;
    const hold = (): Promise<Progress> => {
      asked++;
      return Promise.resolve({ reason: 'the finalizers are not set', afterMs: 1500 });
    };
    const err = await cloud()
      .gated(hold)
      .gated(noting('never'))
      .client('network')
      .call('PUT', '/networks/x', { json: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteHeld);
    expect(err).toMatchObject({ progress: { reason: 'the finalizers are not set', afterMs: 1500 } });
    // Asked once (a hold is not a network failure: not retried), the gate after it never, nothing sent but the token.
    expect(asked).toBe(1);
    expect(log).toEqual(['token']);
  });

  it('sends nothing when a gate fails: the write fails with the gate\'s own error', async () => {
    log.length = 0;
    const broken = new Error('the create journal ConfigMap refused the write');
    const err = await cloud()
      .gated(() => Promise.reject(broken))
      .client('network')
      .post('/networks', {})
      .catch((e: unknown) => e);
    expect(err).toBe(broken);
    expect(log).toEqual(['token']);
  });
});

/** A journal that notes its lines in the shared log; `begin` resolves once "stored", a turn later. */
function notingJournal(): CreateJournal {
  let next = 0;
  return {
    begin: async (addresses) => {
      await new Promise((r) => setTimeout(r, 5));
      log.push(`begin ${addresses.join(',')}`);
      return `e${next++}`;
    },
    end: (entry) => {
      log.push(`end ${entry}`);
      return Promise.resolve();
    },
    landing: () => Promise.resolve(new Map()),
    landed: () => Promise.resolve(),
  };
}

describe('a journaled create', () => {
  it('stores its line after the outer gate and before the POST leaves, and ends it once answered', async () => {
    log.length = 0;
    const run = cloud().gated(noting('finalizers'));
    await journaled(notingJournal(), run, ['ns/Network/a'], () => 60_000, async (c) => {
      await c.client('network').get('/networks');
      return c.client('network').post('/networks', { network: { name: 'a' } });
    });
    expect(log).toEqual(['token', 'GET /network/v2.0/networks', 'gate finalizers', 'begin ns/Network/a', 'POST /network/v2.0/networks', 'end e0']);
  });

  it('sends nothing while its line is not stored yet, however long that takes (audit 3 F1: the create never leaves before it)', async () => {
    log.length = 0;
    let release: () => void = () => undefined;
    let asked: () => void = () => undefined;
    const beginAsked = new Promise<void>((r) => (asked = r));
    const slow: CreateJournal = {
      ...notingJournal(),
      begin: async (addresses) => {
        asked();
        await new Promise<void>((r) => (release = r));
        log.push(`begin ${addresses.join(',')}`);
        return 'slow';
      },
    };
    let done = false;
    const create = journaled(slow, cloud(), ['ns/Network/slow'], () => 60_000, (c) => c.client('network').post('/networks', {})).finally(() => (done = true));
    await beginAsked;
    // The journal's write is held for half a second: the POST (a loopback round trip) must not leave meanwhile.
    await new Promise((r) => setTimeout(r, 500));
    expect({ done, log: [...log] }).toEqual({ done: false, log: ['token'] });
    release();
    await create;
    expect(log).toEqual(['token', 'begin ns/Network/slow', 'POST /network/v2.0/networks', 'end slow']);
  });

  it('stores no line when the outer gate holds the write: nothing for the next run to wait for', async () => {
    log.length = 0;
    const run = cloud().gated(() => Promise.resolve({ reason: 'held', afterMs: 1000 }));
    const err = await journaled(notingJournal(), run, ['ns/Network/b'], () => 60_000, (c) => c.client('network').post('/networks', {})).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteHeld);
    expect(log).toEqual(['token']);
  });

  it('keeps its line when the answer was lost (a gateway\'s 504): the service may still make it, the next run waits for it', async () => {
    log.length = 0;
    const err = await journaled(notingJournal(), cloud(), ['ns/Network/lost'], () => 60_000, (c) => c.client('network').post('/gateway-lost', {})).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenStackError);
    expect(err).toMatchObject({ status: 504 });
    expect(log).toEqual(['token', 'begin ns/Network/lost', 'POST /network/v2.0/gateway-lost']);
  });

  it('ends its line when the service answered a refusal or closed the connection: the create is over, nothing to wait for', async () => {
    log.length = 0;
    const refused = await journaled(notingJournal(), cloud(), ['ns/Network/r'], () => 60_000, (c) => c.client('network').post('/refused', {})).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 409 });
    expect(log).toEqual(['token', 'begin ns/Network/r', 'POST /network/v2.0/refused', 'end e0']);
    log.length = 0;
    const dropped = await journaled(notingJournal(), cloud(), ['ns/Network/d'], () => 60_000, (c) => c.client('network').post('/dropped', {})).catch((e: unknown) => e);
    expect(dropped).toMatchObject({ status: 0, timedOut: false });
    expect(log).toEqual(['token', 'begin ns/Network/d', 'POST /network/v2.0/dropped', 'end e0']);
  });

  it('leaves a cloud without a journal ungated', async () => {
    const run = cloud();
    let given: OpenStackCloud | undefined;
    await journaled(undefined, run, ['ns/Network/c'], () => 60_000, (c) => {
      given = c;
      return Promise.resolve();
    });
    expect(given).toBe(run);
  });
});
