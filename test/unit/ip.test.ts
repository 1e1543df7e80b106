import { describe, expect, it } from 'vitest';
import { cidrContains, cidrsOverlap, formatCidr, isCidr, isIp, parseCidr, parseIp } from '../../agent/util/ip.ts';

describe('address arithmetic', () => {
  it('accepts IPv4 and IPv6 addresses and CIDRs, and refuses look-alikes', () => {
    for (const ok of ['10.0.0.1', '::1', 'fd00::1', '2001:db8::']) expect(isIp(ok)).toBe(true);
    for (const bad of ['10.0.0', '10.0.0.256', '1', '0x0a.0.0.1', 'fd00:::1', '']) expect(isIp(bad)).toBe(false);
    for (const ok of ['10.0.0.0/8', '0.0.0.0/0', 'fd00::/64', '192.168.1.0/32']) expect(isCidr(ok)).toBe(true);
    for (const bad of ['10.0.0.0/33', '10.0.0.0', 'fd00::/129', '10.0.0.0/-1', '10.0.0.0/ 8']) expect(isCidr(bad)).toBe(false);
  });

  it('normalises host bits and compares ranges', () => {
    const a = parseCidr('10.0.0.5/24')!;
    expect(formatCidr(a)).toBe('10.0.0.0/24');
    expect(a.address).not.toBe(a.network);
    expect(cidrContains(a, parseIp('10.0.0.255')!)).toBe(true);
    expect(cidrContains(a, parseIp('10.0.1.0')!)).toBe(false);
    expect(cidrsOverlap(parseCidr('10.0.0.0/16')!, parseCidr('10.0.200.0/24')!)).toBe(true);
    expect(cidrsOverlap(parseCidr('10.0.0.0/24')!, parseCidr('10.0.1.0/24')!)).toBe(false);
    expect(cidrsOverlap(parseCidr('fd00::/8')!, parseCidr('10.0.0.0/8')!)).toBe(false);
    expect(formatCidr(parseCidr('fd00:0:0:1::9/64')!)).toBe('fd00:0:0:1::/64');
  });
});
