import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sourceOf, type ImageContext } from '../../agent/kinds/image/oci.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import { configureAgentCredentials, mayUseAgentCredentials } from '../../agent/net/registry-credentials.ts';

// Issue 47: an Image without credentialsSecretRef must not borrow the agent's own registry
// credentials in a tenant namespace; admin namespaces and registries the admin lists keep them.
const labels: Record<string, Record<string, string>> = { tenant: {}, ops: { 'kupenstack.io/admin': 'true' } };
let server: Server;
let registry = '';
/** The Authorization header of each request the registry got ('' when none). */
const seen: string[] = [];
const savedDockerConfig = process.env.DOCKER_CONFIG;

beforeAll(async () => {
  // A registry that wants Basic auth for everything: whether the agent's password is offered is all it records.
  server = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '');
    res.writeHead(401, { 'www-authenticate': 'Basic realm="test"', 'content-type': 'application/json' });
    res.end('{"errors":[{"code":"UNAUTHORIZED"}]}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  registry = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'agent-docker-config-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ auths: { [registry]: { auth: Buffer.from('agent:agent-password-1').toString('base64') } } }));
  process.env.DOCKER_CONFIG = dir;
});

afterAll(async () => {
  if (savedDockerConfig === undefined) delete process.env.DOCKER_CONFIG;
  else process.env.DOCKER_CONFIG = savedDockerConfig;
  configureAgentCredentials(undefined);
  await new Promise<void>((r) => server.close(() => r()));
});

afterEach(() => {
  configureAgentCredentials(undefined);
  seen.length = 0;
});

function image(namespace: string): Manifest {
  return {
    apiVersion: 'kupenstack.io/v1alpha1',
    kind: 'Image',
    metadata: { name: 'os', namespace },
    spec: { source: { oci: { repository: `${registry}/team/private-os`, tag: 'stable', insecure: true } } },
    source: { file: `${namespace}/os.yaml`, line: 1 },
    address: `${namespace}/Image/os`,
  } as unknown as Manifest;
}

/** Resolves the Image's tag as the kind does, and says whether the agent's password went to the registry. */
async function offersAgentPassword(namespace: string): Promise<boolean> {
  const ctx = { namespace } as unknown as ImageContext;
  const source = await sourceOf(image(namespace), ctx);
  await source.resolve({ repository: `${registry}/team/private-os`, tag: 'stable', insecure: true }).catch(() => undefined);
  expect(seen.length, 'the registry was asked').toBeGreaterThan(0);
  return seen.some((h) => h === `Basic ${Buffer.from('agent:agent-password-1').toString('base64')}`);
}

describe("an Image without credentialsSecretRef and the agent's own registry credentials", () => {
  it('in a tenant namespace: anonymous, the agent password is never sent', async () => {
    configureAgentCredentials({ isAdmin: (ns) => labels[ns]?.['kupenstack.io/admin'] === 'true', registries: [] });
    expect(await offersAgentPassword('tenant')).toBe(false);
  });

  it('in an admin namespace: the agent credentials, as before', async () => {
    configureAgentCredentials({ isAdmin: (ns) => labels[ns]?.['kupenstack.io/admin'] === 'true', registries: [] });
    expect(await offersAgentPassword('ops')).toBe(true);
  });

  it('a registry the cluster admin lists (--agent-credentials-registry): the agent credentials for every namespace', async () => {
    configureAgentCredentials({ isAdmin: (ns) => labels[ns]?.['kupenstack.io/admin'] === 'true', registries: [registry.toUpperCase()] });
    expect(await offersAgentPassword('tenant')).toBe(true);
    expect(mayUseAgentCredentials('tenant', 'docker.io')).toBe(false);
  });

  it('not configured (the standalone agent, the CLI, run with the operator own config): the agent credentials', async () => {
    expect(mayUseAgentCredentials('tenant', registry)).toBe(true);
    expect(await offersAgentPassword('tenant')).toBe(true);
  });
});
