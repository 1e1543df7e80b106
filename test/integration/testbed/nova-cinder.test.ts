import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { adminSession } from '../../support/keystone.ts';

/** Polls until `check` returns a value, failing after `ms`. */
async function until<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

describe('the test-bed Nova and Cinder', () => {
  it('boot a server on a Neutron network to ACTIVE and create a volume to available', async () => {
    const { token, endpoint } = await adminSession();
    const h = { 'x-auth-token': token, 'content-type': 'application/json' };
    const call = async (method: string, url: string, body?: unknown) => {
      // Cinder refuses a request that names another service's microversion.
      const headers = url.startsWith(endpoint('compute')) ? { ...h, 'openstack-api-version': 'compute 2.74' } : h;
      const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, Record<string, unknown>>) : {} };
    };
    const tag = `smoke-${Date.now()}`;
    const net = `${endpoint('network')}/v2.0`;
    const nova = endpoint('compute');
    const glance = `${endpoint('image')}/v2`;
    const cinder = endpoint('volumev3');
    const cleanup: (() => Promise<unknown>)[] = [];
    try {
      const network = (await call('POST', `${net}/networks`, { network: { name: tag } })).body.network!;
      cleanup.unshift(() => call('DELETE', `${net}/networks/${String(network.id)}`));
      expect((await call('POST', `${net}/subnets`, { subnet: { network_id: network.id, cidr: '192.168.77.0/24', ip_version: 4 } })).status).toBe(201);
      const flavor = (await call('POST', `${nova}/flavors`, { flavor: { name: tag, ram: 64, vcpus: 1, disk: 1 } })).body.flavor!;
      cleanup.push(() => call('DELETE', `${nova}/flavors/${String(flavor.id)}`));
      const image = (await call('POST', `${glance}/images`, { name: tag, disk_format: 'raw', container_format: 'bare' })).body as unknown as { id: string };
      cleanup.push(() => call('DELETE', `${glance}/images/${image.id}`));
      await fetch(`${glance}/images/${image.id}/file`, { method: 'PUT', headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream' }, body: Buffer.alloc(1024) });

      const created = await call('POST', `${nova}/servers`, { server: { name: tag, flavorRef: flavor.id, imageRef: image.id, networks: [{ uuid: network.id }] } });
      expect(created.status).toBe(202);
      const serverId = String(created.body.server!.id);
      cleanup.unshift(async () => {
        await call('DELETE', `${nova}/servers/${serverId}`);
        await until('server deletion', 60_000, async () => ((await call('GET', `${nova}/servers/${serverId}`)).status === 404 ? true : undefined));
      });
      const server = await until('server ACTIVE', 90_000, async () => {
        const s = (await call('GET', `${nova}/servers/${serverId}`)).body.server!;
        if (s.status === 'ERROR') throw new Error(`server went to ERROR: ${JSON.stringify(s.fault)}`);
        return s.status === 'ACTIVE' ? s : undefined;
      });
      expect(Object.keys(server.addresses as object)).toEqual([tag]);

      const volume = (await call('POST', `${cinder}/volumes`, { volume: { name: tag, size: 1 } })).body.volume!;
      cleanup.unshift(() => call('DELETE', `${cinder}/volumes/${String(volume.id)}`));
      const status = await until('volume available', 60_000, async () => {
        const v = (await call('GET', `${cinder}/volumes/${String(volume.id)}`)).body.volume!;
        return v.status === 'available' || v.status === 'error' ? v.status : undefined;
      });
      expect(status).toBe('available');
    } finally {
      for (const c of cleanup) await c();
    }
  });
});
