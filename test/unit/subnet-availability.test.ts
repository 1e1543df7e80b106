import { describe, expect, it } from 'vitest';
import { addressStatus, availabilityKey, poolSize } from '../../agent/kinds/subnet/availability.ts';

describe("a subnet's addresses as status", () => {
  it('counts the addresses of the allocation pools, IPv4 and IPv6, and none past an exact JSON integer', () => {
    expect(poolSize([{ start: '10.0.0.2', end: '10.0.0.254' }])).toBe(253);
    expect(poolSize([{ start: '10.0.0.10', end: '10.0.0.20' }, { start: '10.0.0.100', end: '10.0.0.200' }])).toBe(112);
    expect(poolSize([{ start: '10.0.0.5', end: '10.0.0.5' }])).toBe(1);
    expect(poolSize([{ start: '2001:db8::10', end: '2001:db8::1:f' }])).toBe(0x10000);
    // A /64's pool: 2^64 - 2 addresses.
    expect(poolSize([{ start: '2001:db8::1', end: '2001:db8::ffff:ffff:ffff:fffe' }])).toBeUndefined();
    expect(poolSize([])).toBe(0);
  });

  it('reports usedIPs only where Neutron answered, totalIPs from the pools', () => {
    const pools = [{ start: '10.0.0.2', end: '10.0.0.254' }];
    expect(addressStatus({ allocation_pools: pools, [availabilityKey]: { used: 3 } })).toEqual({ usedIPs: 3, totalIPs: 253 });
    expect(addressStatus({ allocation_pools: pools })).toEqual({ totalIPs: 253 });
    expect(addressStatus({})).toEqual({});
  });
});
