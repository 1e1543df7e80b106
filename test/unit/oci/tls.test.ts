import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryClient } from '../../../oci/client.ts';
import { fetchManifest } from '../../../oci/manifest.ts';

// TLS is verified by default; a private CA is added with caFile, never by turning verification off.
const dir = mkdtempSync(join(tmpdir(), 'kupenstack-tls-'));
let server: Server;
let registry = '';
const manifest = JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [] });

describe('registry TLS', () => {
  beforeAll(async () => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' }).end(manifest);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    registry = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  it('refuses a certificate it cannot verify', async () => {
    await expect(fetchManifest(new RegistryClient({ registry, retries: 0 }), 'r', 'latest')).rejects.toMatchObject({ code: 'oci.network', message: expect.stringMatching(/certificate/i) as unknown });
  });

  it('trusts it through caFile', async () => {
    const got = await fetchManifest(new RegistryClient({ registry, caFile: join(dir, 'cert.pem') }), 'r', 'latest');
    expect(got.manifest.kind).toBe('index');
  });
});
