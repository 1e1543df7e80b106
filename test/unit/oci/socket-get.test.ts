import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBlob } from '../../../oci/blob.ts';
import { RegistryClient } from '../../../oci/client.ts';
import { socketGet } from '../../../oci/socket-get.ts';
import { SlabPool, slabPool } from '../../../lib/stream/slab-pool.ts';
import { socketPut } from '../../../agent/glance/socket-put.ts';

// The blob GET read off the socket into slabs (oci/socket-get.ts) and the Glance PUT that gives pieces back
// (agent/glance/socket-put.ts): the bytes are right and verified, a broken body resumes, what that path does
// not read goes through the client's full path, and a reader that stops reading stops the socket.
const blob = randomBytes(3 * 1024 * 1024 + 12345);
const digest = `sha256:${createHash('sha256').update(blob).digest('hex')}`;
const path = `/v2/r/blobs/${digest}`;
type Mode = 'plain' | 'cut-once' | 'chunked' | 'endless';
let mode: Mode = 'plain';
let gets: Array<{ range: string | undefined }> = [];
let cut = false;

function serve(req: IncomingMessage, res: ServerResponse): void {
  if (req.url !== path) return void res.writeHead(404).end();
  gets.push({ range: req.headers.range });
  const from = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
  const body = blob.subarray(from);
  if (mode === 'endless') {
    res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) });
    const more = (): void => {
      while (res.write(Buffer.alloc(256 * 1024))) writtenEndless += 256 * 1024;
      writtenEndless += 256 * 1024;
    };
    res.on('drain', more);
    more();
    return;
  }
  const headers: Record<string, string> = mode === 'chunked' ? {} : { 'content-length': String(body.length) };
  if (from > 0) headers['content-range'] = `bytes ${from}-${blob.length - 1}/${blob.length}`;
  res.writeHead(from > 0 ? 206 : 200, headers);
  if (mode === 'cut-once' && !cut) {
    cut = true;
    res.write(body.subarray(0, 100_003), () => res.socket?.destroy());
    return;
  }
  res.end(body);
}
let writtenEndless = 0;

const dir = mkdtempSync(join(tmpdir(), 'kupenstack-socket-get-'));
let server: Server;
let tlsServer: Server;
let plain = '';
let secure = '';

async function pull(client: RegistryClient): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of openBlob(client, 'r', { digest, size: blob.length }, { retries: 2 }) as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

beforeAll(async () => {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  server = createServer(serve);
  tlsServer = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, serve);
  for (const s of [server, tlsServer]) await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  plain = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  secure = `127.0.0.1:${(tlsServer.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
  tlsServer.close();
});

describe('blob GET off the socket', () => {
  it('reads a blob of several slabs over plain HTTP, verified, in one GET of pieces of up to 1 MiB', async () => {
    mode = 'plain';
    gets = [];
    const client = new RegistryClient({ registry: plain, insecure: true });
    const sizes: number[] = [];
    for await (const c of openBlob(client, 'r', { digest, size: blob.length }) as AsyncIterable<Buffer>) sizes.push(c.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(blob.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1024 * 1024);
    expect(gets).toEqual([{ range: undefined }]);
    expect(client.blobRequests).toBe(1);
  });

  it('reads over https with the registry CA (caFile) and refuses a certificate it cannot verify', async () => {
    mode = 'plain';
    expect((await pull(new RegistryClient({ registry: secure, caFile: join(dir, 'cert.pem') }))).equals(blob)).toBe(true);
    await expect(pull(new RegistryClient({ registry: secure, retries: 0 }))).rejects.toMatchObject({
      message: expect.stringMatching(/certificate/i) as unknown,
    });
  });

  it('resumes a body cut inside its first slab with Range from the byte it has (the held bytes were handed on)', async () => {
    mode = 'cut-once';
    cut = false;
    gets = [];
    expect((await pull(new RegistryClient({ registry: plain, insecure: true }))).equals(blob)).toBe(true);
    expect(gets).toHaveLength(2);
    expect(gets[0]!.range).toBeUndefined();
    expect(Number(/^bytes=(\d+)-$/.exec(gets[1]!.range ?? '')?.[1])).toBe(100_003);
  });

  it('leaves a chunked answer to the full client, which reads it as before', async () => {
    mode = 'chunked';
    gets = [];
    expect((await pull(new RegistryClient({ registry: plain, insecure: true }))).equals(blob)).toBe(true);
    expect(gets).toHaveLength(2);
  });

  it('stops reading the socket while its reader is full (TCP holds the sender back)', async () => {
    mode = 'endless';
    writtenEndless = 0;
    const res = await socketGet({ url: new URL(`http://${plain}${path}`), headers: {}, timeoutMs: 10_000 });
    expect(res.status).toBe(200);
    await sleep(500);
    const buffered = res.body!.readableLength;
    const written = writtenEndless;
    await sleep(300);
    expect(writtenEndless).toBe(written);
    // The reader's buffer holds about one slab; the rest waits in the kernel's socket buffers.
    expect(buffered).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(written).toBeLessThan(48 * 1024 * 1024);
    res.body!.destroy();
  });
});

describe('the slab pool', () => {
  it('gives a slab back only once the reader retired it and every piece handed out was released', () => {
    const pool = new SlabPool(1024, 2);
    const slab = pool.take();
    const a = pool.handOut(slab.subarray(0, 100));
    const b = pool.handOut(slab.subarray(100, 300));
    pool.release(a);
    pool.retire(slab);
    pool.release(a); // twice counts once
    pool.release(Buffer.alloc(10)); // not a piece: ignored
    expect(pool.take().buffer).not.toBe(slab.buffer);
    pool.release(b);
    expect(pool.take().buffer).toBe(slab.buffer);
    expect(pool.reused).toBe(1);
  });

  it('never reuses a slab with a piece not released (the collector frees it)', () => {
    const pool = new SlabPool(1024, 2);
    const slab = pool.take();
    pool.handOut(slab.subarray(0, 10));
    pool.retire(slab);
    expect(pool.take().buffer).not.toBe(slab.buffer);
    expect(pool.reused).toBe(0);
  });
});

describe('Glance PUT on the socket', () => {
  it('sends the body with its length, answers 204, and gives the written pieces back to the pool', async () => {
    let got = Buffer.alloc(0);
    const glance = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        got = Buffer.concat(parts);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => glance.listen(0, '127.0.0.1', resolve));
    try {
      mode = 'plain';
      const res = await socketGet({ url: new URL(`http://${plain}${path}`), headers: {}, timeoutMs: 10_000 });
      const before = slabPool.reused;
      const url = new URL(`http://127.0.0.1:${(glance.address() as AddressInfo).port}/v2/images/x/file`);
      const answer = await socketPut(url, res.body!, { headers: { 'x-auth-token': 't' }, length: blob.length });
      expect(answer.status).toBe(204);
      expect(got.equals(blob)).toBe(true);
      // The next slabs come from the ones this transfer gave back.
      const taken = [slabPool.take(), slabPool.take()];
      expect(slabPool.reused).toBeGreaterThan(before);
      for (const t of taken) slabPool.retire(t);
    } finally {
      glance.close();
    }
  });

  it('answers a refusal before the last byte with its status and text, the body no further read', async () => {
    const glance = createServer((req, res) => {
      req.once('data', () => res.writeHead(413, { 'content-type': 'text/plain', 'content-length': '8' }).end('too big\n'));
    });
    await new Promise<void>((resolve) => glance.listen(0, '127.0.0.1', resolve));
    try {
      const body = Readable.from(
        (function* () {
          for (let i = 0; i < 1000; i++) yield Buffer.alloc(64 * 1024);
        })(),
      );
      const url = new URL(`http://127.0.0.1:${(glance.address() as AddressInfo).port}/file`);
      const answer = await socketPut(url, body, { headers: {}, length: 1000 * 64 * 1024 });
      expect(answer).toMatchObject({ status: 413, text: 'too big\n' });
      expect(body.destroyed).toBe(true);
    } finally {
      glance.closeAllConnections();
      glance.close();
    }
  });
});
