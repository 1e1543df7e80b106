import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressGate } from '../../../agent/net/egress-gate.ts';
import { makePolicy, parseAllowRule } from '../../../agent/net/egress-policy.ts';
import { EgressRefused, egressRefusalIn } from '../../../agent/net/egress-refused.ts';

/** A resolver the test controls, counting each lookup: what "resolved once" is proven with. */
function resolver(answers: Record<string, string[][]>): { resolve: (host: string) => Promise<string[]>; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    resolve: (host) => {
      const n = calls.filter((c) => c === host).length;
      calls.push(host);
      const list = answers[host];
      return list ? Promise.resolve(list[Math.min(n, list.length - 1)]!) : Promise.reject(new Error(`ENOTFOUND ${host}`));
    },
  };
}

const policy = makePolicy({ serviceCidrs: ['10.96.0.0/12'], podCidrs: ['10.244.0.0/16'], ownAddresses: ['203.0.113.7'] });

async function refusal(gate: EgressGate, url: string): Promise<EgressRefused> {
  const err = await gate.check(url).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(EgressRefused);
  return err as EgressRefused;
}

describe('the egress policy refuses by default', () => {
  const r = resolver({ 'loop.example': [['127.0.0.1']], 'mixed.example': [['198.51.100.1', '10.0.0.5']], 'public.example': [['198.51.100.1']] });
  const gate = new EgressGate(policy, 'team-a', {}, r.resolve);

  it.each([
    ['http://127.0.0.1:5000/v3', 'loopback'],
    ['http://127.9.9.9/', 'loopback'],
    ['http://2130706433/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://[::1]:6443/version', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local (cloud metadata)'],
    ['http://0.0.0.0:8080/', 'unspecified'],
    ['https://10.96.0.1/version', "the cluster's Service CIDR (--egress-service-cidr)"],
    ['http://10.244.3.4/', "the cluster's pod CIDR (--egress-pod-cidr)"],
    ['http://10.1.2.3/', 'private'],
    ['http://192.168.1.1/', 'private'],
    ['http://[fd00::1]/', 'private (unique local)'],
    ['http://203.0.113.7:9090/metrics', 'an address of the agent itself'],
    ['http://loop.example/', 'loopback'],
    ['http://mixed.example/', 'private'],
    ['file:///etc/passwd', 'scheme'],
    ['unix:/var/run/docker.sock', 'scheme'],
    ['ftp://198.51.100.1/', 'scheme'],
  ])('%s → %s', async (url, rule) => {
    const err = await refusal(gate, url);
    expect(err.rule).toBe(rule);
    expect(err.message).toContain(`rule: ${rule}`);
    expect(err.code).toBe('egress.refused');
  });

  it('lets a public address through', async () => {
    await expect(gate.check('https://public.example/disk.qcow2')).resolves.toBeUndefined();
    await expect(gate.check('https://198.51.100.20/')).resolves.toBeUndefined();
  });
});

describe('admin rules open ranges and hosts by namespace label', () => {
  const rules = [parseAllowRule('kupenstack.io/egress=lab=>10.0.0.0/8,registry.lab:5000'), parseAllowRule('team=infra=>10.96.0.0/16')];
  const p = makePolicy({ serviceCidrs: ['10.96.0.0/12'], ownAddresses: [], allow: rules });
  const r = resolver({ 'registry.lab': [['127.0.0.1']] });

  it('opens a range to labelled namespaces only', async () => {
    const lab = new EgressGate(p, 'lab', { 'kupenstack.io/egress': 'lab' }, r.resolve);
    const other = new EgressGate(p, 'other', { 'kupenstack.io/egress': 'prod' }, r.resolve);
    await expect(lab.check('http://10.1.2.3/')).resolves.toBeUndefined();
    expect((await refusal(other, 'http://10.1.2.3/')).rule).toBe('private');
  });

  it('a broad range does not open a narrower refused one inside it (the Service range)', async () => {
    const lab = new EgressGate(p, 'lab', { 'kupenstack.io/egress': 'lab' }, r.resolve);
    expect((await refusal(lab, 'https://10.96.0.1/')).rule).toBe("the cluster's Service CIDR (--egress-service-cidr)");
    const infra = new EgressGate(p, 'infra', { team: 'infra' }, r.resolve);
    await expect(infra.check('https://10.96.0.1/')).resolves.toBeUndefined();
  });

  it('a host rule names host and port', async () => {
    const lab = new EgressGate(p, 'lab', { 'kupenstack.io/egress': 'lab' }, r.resolve);
    await expect(lab.check('http://registry.lab:5000/v2/')).resolves.toBeUndefined();
    expect((await refusal(lab, 'http://registry.lab:5001/v2/')).rule).toBe('loopback');
  });

  it('rejects malformed rules with the expected form', () => {
    expect(() => parseAllowRule('10.0.0.0/8')).toThrow(/SELECTOR=>TARGET/);
    expect(() => parseAllowRule('*=>10.0.0.0/33')).toThrow(/not a CIDR/);
    expect(() => parseAllowRule('a b=>10.0.0.0/8')).toThrow(/not key=value/);
    expect(() => parseAllowRule('*=>')).toThrow(/names no CIDR/);
    expect(parseAllowRule('*=>::1/128').namespaceSelector).toEqual({});
  });
});

describe('the gate\'s dispatcher connects to the address it judged', () => {
  let allowed: Server;
  let other: Server;
  const hits: string[] = [];
  let port = 0;

  beforeAll(async () => {
    allowed = createServer((req, res) => {
      hits.push(`127.0.0.1 ${req.url}`);
      if (req.url === '/redirect-public') return void res.writeHead(302, { location: `http://rebind.test:${port}/data` }).end();
      if (req.url === '/redirect-metadata') return void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      res.end('ok');
    });
    await new Promise<void>((resolve) => allowed.listen(0, '127.0.0.1', resolve));
    port = (allowed.address() as AddressInfo).port;
    other = createServer((req, res) => {
      hits.push(`127.0.0.2 ${req.url}`);
      res.end('rebound');
    });
    await new Promise<void>((resolve) => other.listen(port, '127.0.0.2', resolve));
  });
  afterAll(() => {
    allowed.close();
    other.close();
  });

  it('resolves a name once per connection and sends the request to that address (no rebinding)', async () => {
    hits.length = 0;
    // First answer: an address the rule opens; any later answer: one it does not.
    const r = resolver({ 'rebind.test': [['127.0.0.1'], ['127.0.0.2']] });
    const gate = new EgressGate(makePolicy({ ownAddresses: [], allow: [parseAllowRule('*=>127.0.0.1/32')] }), 'ns', {}, r.resolve);
    const res = await fetch(`http://rebind.test:${port}/data`, { dispatcher: gate.dispatcher });
    expect(await res.text()).toBe('ok');
    expect(r.calls).toEqual(['rebind.test']);
    expect(hits).toEqual(['127.0.0.1 /data']);
    await gate.dispatcher.close();
  });

  it('a second lookup answering a refused address is refused, and that server sees nothing', async () => {
    hits.length = 0;
    const r = resolver({ 'rebind.test': [['127.0.0.2']] });
    const gate = new EgressGate(makePolicy({ ownAddresses: [], allow: [parseAllowRule('*=>127.0.0.1/32')] }), 'ns', {}, r.resolve);
    const err = await fetch(`http://rebind.test:${port}/data`, { dispatcher: gate.dispatcher }).then(() => undefined, (e: unknown) => e);
    expect(egressRefusalIn(err)?.rule).toBe('loopback');
    expect(hits).toEqual([]);
    await gate.dispatcher.close();
  });

  it('every redirect is judged when it connects: one to cloud metadata is refused', async () => {
    hits.length = 0;
    const gate = new EgressGate(makePolicy({ ownAddresses: [], allow: [parseAllowRule('*=>127.0.0.1/32')] }), 'ns', {}, resolver({}).resolve);
    const err = await fetch(`http://127.0.0.1:${port}/redirect-metadata`, { dispatcher: gate.dispatcher }).then(() => undefined, (e: unknown) => e);
    expect(egressRefusalIn(err)?.rule).toBe('link-local (cloud metadata)');
    expect(hits).toEqual(['127.0.0.1 /redirect-metadata']);
    await gate.dispatcher.close();
  });

  it('without a rule, loopback is refused at connect even when check() was skipped', async () => {
    hits.length = 0;
    const gate = new EgressGate(makePolicy({ ownAddresses: [] }), 'ns', {}, resolver({}).resolve);
    const err = await fetch(`http://127.0.0.1:${port}/data`, { dispatcher: gate.dispatcher }).then(() => undefined, (e: unknown) => e);
    expect(egressRefusalIn(err)?.rule).toBe('loopback');
    expect(hits).toEqual([]);
    await gate.dispatcher.close();
  });
});
