import { describe, expect, it } from 'vitest';
import { adoptionSteps, type MemberShape, type Observed, type ObservedListener } from '../../agent/kinds/loadbalancer/tree.ts';

/*
 * Adoption of a load balancer made by hand: which of its children get our
 * tags (and keep the user's). What the real Octavia does with the writes is
 * test/integration/export/export-adopt.test.ts.
 */

const ours = ['kupenstack-owner:me', 'kupenstack-ref:LoadBalancer/web'];
const active = { provisioning_status: 'ACTIVE', operating_status: 'ONLINE' };
const monitor = { type: 'HTTP', delay: 5, timeout: 3, max_retries: 3, max_retries_down: 3 };
const member = (id: string, tags: string[] = []): Observed<MemberShape> => ({
  id,
  ...active,
  tags,
  shape: { name: id, address: '10.0.0.5', protocol_port: 8080, weight: 1, subnet_id: 'sub' },
});

function handMade(memberTags: Record<string, string[]> = {}): ObservedListener[] {
  return [
    {
      id: 'l1',
      ...active,
      tags: ['team:web'],
      shape: { name: 'http', protocol: 'HTTP', protocol_port: 80, connection_limit: -1 },
      pool: {
        id: 'p1',
        ...active,
        tags: [],
        shape: { protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' },
        healthmonitor: { id: 'h1', ...active, tags: [], shape: monitor },
        members: [member('m1', memberTags.m1), member('m2', memberTags.m2)],
      },
    },
  ];
}

describe('adopting a load balancer tags its whole tree', () => {
  it('every child, the user\'s tags kept beside ours, parents first', () => {
    const steps = adoptionSteps(handMade(), 'me', ours);
    expect(steps.map((s) => `${s.what} ${'id' in s ? s.id : ''}`)).toEqual(['listener l1', 'pool p1', 'healthmonitor h1', 'member m1', 'member m2']);
    expect(steps[0]).toMatchObject({ op: 'update', body: { tags: ['team:web', ...ours] } });
    expect(steps[3]).toMatchObject({ op: 'update', poolId: 'p1', body: { tags: ours } });
  });

  it('a child already tagged by an earlier, killed run is not written again; another owner\'s child is left alone', () => {
    const steps = adoptionSteps(handMade({ m1: ours, m2: ['kupenstack-owner:them', 'kupenstack-ref:LoadBalancer/x'] }), 'me', ours);
    expect(steps.map((s) => ('id' in s ? s.id : ''))).toEqual(['l1', 'p1', 'h1']);
  });
});
