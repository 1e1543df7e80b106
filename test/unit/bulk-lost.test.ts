import { describe, expect, it } from 'vitest';
import { BulkCreator, bulkTimeoutMs, maxBulksInFlight } from '../../agent/act/bulk.ts';
import type { Node, Run } from '../../agent/act/run.ts';
import type { Remote } from '../../agent/kinds/kit/adapter.ts';
import { OpenStackError } from '../../agent/openstack/errors.ts';

/**
 * Found on the loaded test bed (the OpenTofu bench's 300 resources): a bulk
 * of 60 networks timed out while Neutron was still making them, the lookup
 * found none, and the bulk was sent again — 120 networks. A bulk whose answer
 * did not come in time is never sent again in the run, nor split into single
 * creates; what the lookup finds is adopted.
 */
const lost = (): OpenStackError => new OpenStackError({ status: 0, service: 'network', method: 'POST', path: '/v2.0/networks', detail: 'timed out', timedOut: true });
const busy = (): OpenStackError => new OpenStackError({ status: 503, service: 'network', method: 'POST', path: '/v2.0/networks', detail: 'busy' });

function harness(postErrors: OpenStackError[], observe: () => Promise<Remote[]>, names = ['a', 'b', 'c']): { nodes: Node[]; bulk: BulkCreator; posts: () => number; singles: () => number; bodies: Record<string, unknown>[][] } {
  let posts = 0;
  let singles = 0;
  const bodies: Record<string, unknown>[][] = [];
  const network = {
    call: (_method: string, _path: string, options: { json: { networks: { name: string }[] } }): Promise<unknown> => {
      bodies.push(options.json.networks);
      const err = postErrors[posts++];
      return err ? Promise.reject(err) : Promise.resolve({ body: { networks: options.json.networks.map((n) => ({ id: `id-${n.name}`, name: n.name })) } });
    },
  };
  const adapter = {
    bulkCreate: { collection: 'networks', body: (_c: unknown, m: { name: string }) => ({ name: m.name }), remote: (raw: { id: string }) => ({ id: raw.id, fields: {} }) as unknown as Remote, scope: () => 'admin' },
    observe,
  };
  const cloud = { client: (service: string) => (service === 'network' ? network : undefined), session: { transport: { timeoutMs: 60_000 } }, get base(): object { return cloud; } };
  const nodes = names.map((name) => ({ address: `ns/Network/${name}`, ref: `Network/${name}`, m: { kind: 'Network', name }, adapter, pc: { ctx: { projectId: 'p', cloud } } }) as unknown as Node);
  const run = { opts: { owner: 'o', transientRetries: 3 }, emit: () => undefined } as unknown as Run;
  const bulk = new BulkCreator(run, () => {
    singles++;
    return Promise.resolve({ id: 'single', fields: {} } as unknown as Remote);
  });
  return { nodes, bulk, posts: () => posts, singles: () => singles, bodies };
}

const marker = (ref: string): { owner: string; ref: string; specHash: string } => ({ owner: 'o', ref, specHash: '00000000' });

describe('bulk create after a lost answer', () => {
  it('after a timeout, adopts what the lookup finds and sends nothing again in this run, neither as a bulk nor one by one', async () => {
    const made = { id: 'made-a', fields: {}, marker: marker('Network/a') } as unknown as Remote;
    const h = harness([lost()], () => Promise.resolve([made]));
    const results = await Promise.allSettled(h.nodes.map((n) => h.bulk.create(n, {}, marker(n.ref))));
    expect(results[0]).toEqual({ status: 'fulfilled', value: made });
    expect(results.slice(1).map((r) => (r.status === 'rejected' ? String(r.reason) : 'created'))).toEqual([expect.stringMatching(/not sent again in this run/), expect.stringMatching(/not sent again in this run/)]);
    expect(h.posts()).toBe(1);
    expect(h.singles()).toBe(0);
  });

  it('after a 503 the service answered and a lookup that finds nothing, sends the bulk again', async () => {
    const h = harness([busy()], () => Promise.resolve([]));
    const results = await Promise.all(h.nodes.map((n) => h.bulk.create(n, {}, marker(n.ref))));
    expect(results.map((r) => r.id)).toEqual(['id-a', 'id-b', 'id-c']);
    expect(h.posts()).toBe(2);
    // Sent with the agent's own scope (the only network client the context offers here), each body naming the project.
    expect(h.bodies.flat().map((b) => b.project_id)).toEqual(['p', 'p', 'p', 'p', 'p', 'p']);
  }, 10_000);
});

describe('bulk create scope, size and pace', () => {
  it('sends alone, with the project token, a create the kind says Neutron must judge; refuses one the kind refuses; bulks only the rest', async () => {
    const h = harness([], () => Promise.resolve([]), ['a', 'b', 'c', 'd']);
    const scopes: Record<string, () => 'admin' | 'project'> = {
      a: () => 'admin',
      b: () => 'project',
      c: () => {
        throw new Error('c: refused');
      },
      d: () => 'admin',
    };
    for (const n of h.nodes) (n as unknown as { adapter: { bulkCreate: { scope: unknown } } }).adapter = { ...n.adapter, bulkCreate: { ...n.adapter.bulkCreate!, scope: scopes[n.ref.slice('Network/'.length)]! } };
    const results = await Promise.allSettled(h.nodes.map((n) => h.bulk.create(n, {}, marker(n.ref))));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.id : String(r.reason)))).toEqual(['id-a', 'single', 'Error: c: refused', 'id-d']);
    expect(h.singles()).toBe(1);
    expect(h.bodies).toEqual([[expect.objectContaining({ name: 'a', project_id: 'p' }), expect.objectContaining({ name: 'd', project_id: 'p' })]]);
  });

  it('keeps at most maxBulksInFlight bulk POSTs of one cloud in flight, and gives each a timeout that grows with its size', async () => {
    let running = 0;
    let peak = 0;
    const timeouts: number[] = [];
    const network = {
      call: async (_method: string, _path: string, options: { json: { networks: { name: string }[] }; timeoutMs: number }): Promise<unknown> => {
        timeouts.push(options.timeoutMs);
        peak = Math.max(peak, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return { body: { networks: options.json.networks.map((n) => ({ id: `id-${n.name}`, name: n.name })) } };
      },
    };
    const cloud = { client: () => network, session: { transport: { timeoutMs: 60_000 } }, get base(): object { return cloud; } };
    const adapter = { bulkCreate: { collection: 'networks', body: (_c: unknown, m: { name: string }) => ({ name: m.name }), remote: (raw: { id: string }) => ({ id: raw.id, fields: {} }) as unknown as Remote, scope: () => 'admin' } };
    // 10 projects × 2 networks: 10 bulks of 2 at once.
    const nodes = Array.from({ length: 20 }, (_, i) => ({ address: `ns${i >> 1}/Network/n${i}`, ref: `Network/n${i}`, m: { kind: 'Network', name: `n${i}` }, adapter, pc: { ctx: { projectId: `p${i >> 1}`, cloud } } }) as unknown as Node);
    const run = { opts: { owner: 'o', transientRetries: 0 }, emit: () => undefined } as unknown as Run;
    const bulk = new BulkCreator(run, () => Promise.reject(new Error('no single create expected')));
    const results = await Promise.all(nodes.map((n) => bulk.create(n, {}, marker(n.ref))));
    expect(results).toHaveLength(20);
    expect(bulk.posts).toBe(10);
    expect(peak).toBe(maxBulksInFlight);
    expect(new Set(timeouts)).toEqual(new Set([bulkTimeoutMs(60_000, 2)]));
    expect([bulkTimeoutMs(60_000, 1), bulkTimeoutMs(60_000, 2), bulkTimeoutMs(60_000, 8)]).toEqual([60_000, 75_000, 165_000]);
  });
});
