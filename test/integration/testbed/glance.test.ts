import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { adminSession } from '../../support/keystone.ts';

describe('the test-bed Glance', () => {
  it('stores uploaded bytes and gives the same bytes back', async () => {
    const { token, endpoint } = await adminSession();
    const base = `${endpoint('image')}/v2`;
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const created = await fetch(`${base}/images`, {
      method: 'POST',
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `smoke-${Date.now()}`, disk_format: 'raw', container_format: 'bare' }),
    });
    expect(created.status).toBe(201);
    const image = (await created.json()) as { id: string; status: string };
    expect(image.status).toBe('queued');
    try {
      const put = await fetch(`${base}/images/${image.id}/file`, { method: 'PUT', headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream' }, body: bytes });
      expect(put.status).toBe(204);
      const shown = (await (await fetch(`${base}/images/${image.id}`, { headers: { 'x-auth-token': token } })).json()) as { status: string; size: number; os_hash_value: string };
      expect(shown.status).toBe('active');
      expect(shown.size).toBe(bytes.length);
      expect(shown.os_hash_value).toBe(createHash('sha512').update(bytes).digest('hex'));
      const got = Buffer.from(await (await fetch(`${base}/images/${image.id}/file`, { headers: { 'x-auth-token': token } })).arrayBuffer());
      expect(got.equals(bytes)).toBe(true);
    } finally {
      expect((await fetch(`${base}/images/${image.id}`, { method: 'DELETE', headers: { 'x-auth-token': token } })).status).toBe(204);
    }
  });
});
