import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCounters } from '../../agent/openstack/counters.ts';
import { OpenStackError } from '../../agent/openstack/errors.ts';
import { Transport } from '../../agent/openstack/transport.ts';

/**
 * The OpenStack client's TLS, against a loopback HTTPS server whose
 * certificate openssl makes for this run: verified by default (an unknown
 * issuer is refused), trusted through the clouds.yaml `cacert`, unverified
 * only when `verify: false` says so. The client uses its own dispatcher in
 * every case (so a scaled timeout is not cut by undici's 300 s defaults); these
 * show that dispatcher keeps the verification as configured.
 */
let server: Server;
let url: string;
const dir = mkdtempSync(join(tmpdir(), 'ks-tls-'));
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');

beforeAll(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'pipe' });
  server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v2.0/networks`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (t: Transport) => t.send({ service: 'network', method: 'GET', url });

describe('the OpenStack client over TLS', () => {
  it('refuses a certificate no trusted authority issued, by default', async () => {
    const err = await get(new Transport({ counters: new ApiCounters(), verify: true, retries: 0, timeoutMs: 5_000 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenStackError);
    expect((err as OpenStackError).detail).toMatch(/certificate/i);
  });

  it('trusts it through cacert, and without verification only when verify is false', async () => {
    expect((await get(new Transport({ counters: new ApiCounters(), verify: true, cacert: cert, retries: 0, timeoutMs: 5_000 }))).json).toEqual({ ok: true });
    expect((await get(new Transport({ counters: new ApiCounters(), verify: false, retries: 0, timeoutMs: 5_000 }))).json).toEqual({ ok: true });
  });
});
