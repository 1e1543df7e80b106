import { describe, expect, it } from 'vitest';
import { adminSession } from '../../support/keystone.ts';

describe('the test-bed Neutron', () => {
  it('creates, lists and deletes a network', async () => {
    const { token, endpoint } = await adminSession();
    const base = `${endpoint('network')}/v2.0`;
    const headers = { 'x-auth-token': token, 'content-type': 'application/json' };
    const name = `smoke-${Date.now()}`;
    const created = await fetch(`${base}/networks`, { method: 'POST', headers, body: JSON.stringify({ network: { name, mtu: 1400 } }) });
    expect(created.status).toBe(201);
    const { network } = (await created.json()) as { network: { id: string; mtu: number } };
    expect(network.mtu).toBe(1400);
    try {
      const listed = (await (await fetch(`${base}/networks?name=${name}`, { headers })).json()) as { networks: { id: string }[] };
      expect(listed.networks.map((n) => n.id)).toEqual([network.id]);
    } finally {
      expect((await fetch(`${base}/networks/${network.id}`, { method: 'DELETE', headers })).status).toBe(204);
    }
    expect((await fetch(`${base}/networks/${network.id}`, { headers })).status).toBe(404);
  });
});
