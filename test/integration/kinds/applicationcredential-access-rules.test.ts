import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { issueToken, mountedEntry } from '../../support/appcred.ts';

/**
 * An access-ruled credential does what its rules allow and nothing else, on
 * the bed's real Keystone, Neutron and Nova: keystonemiddleware in each
 * service checks the token's access rules against the call, which it can only
 * do when the service's [keystone_authtoken] names its `service_type`
 * (test/testbed/openstack/configure-service-type.sh writes it for Neutron and Nova).
 */

let ws: Workspace;
let secretsDir: string;
const ns = 'appcred-rules';

beforeAll(() => {
  ws = new Workspace();
  secretsDir = join(ws.dir, 'secrets');
  ws.secrets = new EnvFileSecretResolver({ secretsDir });
});
afterAll(async () => {
  // A network the refused create made after all (the rules not enforced) is not KupenStack's: removed here, by its unique name.
  const network = ws.cloud.client('network');
  for (const n of await network.list<{ id: string }>('/networks', 'networks', { name: `refused-${ws.owner}` })) await network.remove(`/networks/${n.id}`);
  await ws.dispose();
});

/** One call with the token, as any client makes it; the status only. */
async function call(url: string, token: string, method = 'GET', body?: unknown): Promise<number> {
  const res = await fetch(url, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  if (res.status >= 500) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return res.status;
}

describe('an ApplicationCredential limited to listing networks', () => {
  it('lists the project\'s networks, and is refused a network create and every compute call', async () => {
    ws.write({
      'net.yaml': `${head('Network', 'app-net', ns)}  mtu: 1400\n`,
      'cred.yaml': `${head('ApplicationCredential', 'lister', ns)}  roles: [member]\n  secretRef: {name: lister-cloud}\n  accessRules:\n    - {service: network, method: GET, path: /v2.0/networks}\n`,
    });
    const applied = await ws.apply();
    expect(applied.report!.errors, ws.log.join('\n')).toEqual([]);

    const token = await issueToken(mountedEntry(secretsDir, ns, 'lister-cloud'));
    expect(token.status).toBe(201);
    const network = token.endpoints!.network!;
    const compute = token.endpoints!.compute!;

    // Inside its rules: Neutron answers with the project's network.
    const res = await fetch(`${network}/v2.0/networks`, { headers: { 'x-auth-token': token.token! } });
    const text = await res.text();
    expect(
      res.status,
      `Neutron refused the one call the rules allow (${text}): its [keystone_authtoken] needs service_type = network; run test/testbed/openstack/up.sh (configure-service-type.sh)`,
    ).toBe(200);
    expect((JSON.parse(text) as { networks: { name: string }[] }).networks.map((n) => n.name)).toContain('app-net');

    // Outside them: the same role may create networks and list servers, the credential may not.
    expect(await call(`${network}/v2.0/networks`, token.token!, 'POST', { network: { name: `refused-${ws.owner}` } })).toBe(401);
    expect(await call(`${network}/v2.0/networks/${'0'.repeat(8)}`, token.token!)).toBe(401);
    expect(await call(`${compute}/servers`, token.token!)).toBe(401);
    expect(await call(`${compute}/flavors`, token.token!)).toBe(401);
    // Nothing was made by the refused create.
    const made = await ws.cloud.client('network').list<{ id: string }>('/networks', 'networks', { name: `refused-${ws.owner}` });
    expect(made).toEqual([]);

    ws.remove('cred.yaml');
    ws.remove('net.yaml');
    const pruned = await ws.apply({ prune: true, allowMassDelete: true });
    expect(pruned.report!.errors, ws.log.join('\n')).toEqual([]);
  });
});
