import { describe, expect, it } from 'vitest';
import { adminSession } from '../../support/keystone.ts';

describe('the test-bed Keystone', () => {
  it('issues a project-scoped token whose catalog lists every service on loopback', async () => {
    const session = await adminSession();
    expect(session.token.length).toBeGreaterThan(20);
    const types = session.catalog.map((c) => c.type).sort();
    for (const t of ['compute', 'identity', 'image', 'network', 'placement', 'volumev3']) expect(types).toContain(t);
    for (const t of ['compute', 'identity', 'image', 'network', 'placement', 'volumev3']) expect(session.endpoint(t)).toMatch(/^http:\/\/127\.0\.0\.1:\d+/);
  });
});
