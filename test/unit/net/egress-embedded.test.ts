import { describe, expect, it } from 'vitest';
import { EgressGate } from '../../../agent/net/egress-gate.ts';
import { judge, makePolicy, parseAllowRule } from '../../../agent/net/egress-policy.ts';
import { EgressRefused } from '../../../agent/net/egress-refused.ts';

// Issue 47: IPv6 forms that reach an IPv4 address on the way (NAT64, 6to4, Teredo,
// IPv4-compatible) are judged by that IPv4 address; fec0::/10, 100::/64 and 64:ff9b:1::/48 are refused.
const policy = makePolicy({ serviceCidrs: ['10.96.0.0/12'], ownAddresses: [] });
const verdict = (address: string, rules = policy.allow): ReturnType<typeof judge> => judge(policy, rules, address, 443, address);

describe('the egress policy judges the IPv4 address an IPv6 one embeds', () => {
  it.each([
    ['64:ff9b::127.0.0.1', 'loopback', 'NAT64 64:ff9b::/96'],
    ['64:ff9b::a9fe:a9fe', 'link-local (cloud metadata)', 'NAT64 64:ff9b::/96'],
    ['64:ff9b::10.96.0.1', "the cluster's Service CIDR (--egress-service-cidr)", 'NAT64 64:ff9b::/96'],
    ['2002:7f00:1::', 'loopback', '6to4 2002::/16'],
    ['2002:a9fe:a9fe::1', 'link-local (cloud metadata)', '6to4 2002::/16'],
    // As a URL writes them: new URL('http://[::127.0.0.1]/').hostname is [::7f00:1].
    ['::7f00:1', 'loopback', 'IPv4-compatible ::/96'],
    ['::a01:203', 'private', 'IPv4-compatible ::/96'],
    ['::ffff:0:10.1.2.3', 'private', 'IPv4-translated ::ffff:0:0:0/96'],
    // Teredo: server 198.51.100.1, client 127.0.0.1 obfuscated (XOR ff).
    ['2001:0:c633:6401::80ff:fffe', 'loopback', 'Teredo 2001::/32'],
  ])('%s → %s (%s)', (address, rule, prefix) => {
    expect(verdict(address)).toMatchObject({ allowed: false, rule, range: expect.stringContaining(`embedded in it by ${prefix}`) as unknown });
  });

  it('the dotted IPv4-compatible form is refused too', () => {
    for (const a of ['::127.0.0.1', '::10.1.2.3', '::169.254.169.254']) expect(verdict(a).allowed, a).toBe(false);
    expect(new URL('http://[::127.0.0.1]/').hostname).toBe('[::7f00:1]');
  });

  it.each([
    ['fec0::1', 'site-local (deprecated)'],
    ['fefe::1', 'site-local (deprecated)'],
    ['100::1', 'discard-only'],
    // Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the site's prefix length, so refused whole.
    ['64:ff9b:1::198.51.100.1', 'local-use NAT64 (its IPv4 embedding is site-specific)'],
    ['2001:db8::1', 'documentation'],
  ])('%s → %s', (address, rule) => {
    expect(verdict(address)).toMatchObject({ allowed: false, rule });
  });

  it('a public IPv4 address behind NAT64 or 6to4 passes, as do :: and ::1 under their own rules', () => {
    for (const a of ['64:ff9b::198.51.100.1', '64:ff9b::c633:6401', '2002:c633:6401::1', '2606:4700::1111']) expect(verdict(a), a).toEqual({ allowed: true });
    expect(verdict('::1')).toMatchObject({ allowed: false, rule: 'loopback', range: '::1/128' });
    expect(verdict('::')).toMatchObject({ allowed: false, rule: 'unspecified', range: '::/128' });
    // 100::/64 is the discard prefix only: 100:0:0:1:: lies outside it.
    expect(verdict('100:0:0:1::1')).toEqual({ allowed: true });
  });

  it("an admin's rule opening the IPv4 range opens its NAT64 form too; a wider IPv6 refusal still holds", () => {
    const rules = [parseAllowRule('*=>10.0.0.0/8')];
    expect(verdict('64:ff9b::10.1.2.3', rules)).toEqual({ allowed: true, by: '*=>10.0.0.0/8' });
    // The Service range inside it stays refused (the most specific range wins), embedded or not.
    expect(verdict('64:ff9b::10.96.0.1', rules)).toMatchObject({ allowed: false, rule: "the cluster's Service CIDR (--egress-service-cidr)" });
    const v6 = makePolicy({ serviceCidrs: ['64:ff9b::/96'], ownAddresses: [] });
    expect(judge(v6, [], '64:ff9b::198.51.100.1', 443, '64:ff9b::198.51.100.1')).toMatchObject({ allowed: false, range: '64:ff9b::/96' });
  });

  it('the gate refuses such a URL before any connection (Image source.url, a registry)', async () => {
    const gate = new EgressGate(policy, 'team-a', {}, () => Promise.reject(new Error('no name is resolved here')));
    for (const url of ['http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', 'http://[2002:7f00:1::]:6443/', 'http://[::127.0.0.1]/', 'https://[fec0::1]/', 'http://[100::1]/']) {
      const err = await gate.check(url).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, url).toBeInstanceOf(EgressRefused);
    }
  });
});
