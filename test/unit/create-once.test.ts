import { describe, expect, it } from 'vitest';
import { createOnce } from '../../agent/act/reconcile-node.ts';
import { type Node, type Run } from '../../agent/act/run.ts';
import type { Remote } from '../../agent/kinds/kit/adapter.ts';
import { OpenStackError } from '../../agent/openstack/errors.ts';

/**
 * Found by the fault proxy (test/integration/faults-openstack.test.ts): on a
 * loaded cloud a create that timed out was still running in Neutron when the
 * marker lookup ran, found nothing, and the create was sent again — two
 * networks. A lost answer is never followed by a second create in the same
 * run; an answer the service gave (a 503) is, after a lookup that found nothing.
 */
const marker = { owner: 'o', ref: 'Network/n', specHash: '00000000' };

function harness(createErrors: OpenStackError[], observe: () => Promise<Remote[]>): { node: Node; run: Run; creates: () => number } {
  let creates = 0;
  const adapter = {
    create: (): Promise<Remote> => {
      const err = createErrors[creates++];
      return err ? Promise.reject(err) : Promise.resolve({ id: 'new', fields: {}, marker } as unknown as Remote);
    },
    observe,
  };
  const node = { address: 'ns/Network/n', ref: 'Network/n', m: {}, adapter, pc: { ctx: {} } } as unknown as Node;
  const run = { opts: { owner: 'o', transientRetries: 3 }, emit: () => undefined } as unknown as Run;
  return { node, run, creates: () => creates };
}

const lost = (): OpenStackError => new OpenStackError({ status: 0, service: 'network', method: 'POST', path: '/v2.0/networks', detail: 'timed out', timedOut: true });
const closed = (): OpenStackError => new OpenStackError({ status: 0, service: 'network', method: 'POST', path: '/v2.0/networks', detail: 'UND_ERR_SOCKET: other side closed' });
const busy = (): OpenStackError => new OpenStackError({ status: 503, service: 'network', method: 'POST', path: '/v2.0/networks', detail: 'busy' });

describe('createOnce', () => {
  it('after a timeout and a lookup that finds nothing, does not create again in this run', async () => {
    const h = harness([lost()], () => Promise.resolve([]));
    await expect(createOnce(h.node, {}, marker, h.run)).rejects.toThrow(/not sent again in this run/);
    expect(h.creates()).toBe(1);
  });

  it('after a lost answer whose lookup fails too, does not create again', async () => {
    const h = harness([lost()], () => Promise.reject(busy()));
    await expect(createOnce(h.node, {}, marker, h.run)).rejects.toThrow(/not sent again/);
    expect(h.creates()).toBe(1);
  });

  it('after a lost answer adopts the object the lookup finds', async () => {
    const mine = { id: 'made', fields: {}, marker } as unknown as Remote;
    const h = harness([lost()], () => Promise.resolve([mine]));
    await expect(createOnce(h.node, {}, marker, h.run)).resolves.toBe(mine);
    expect(h.creates()).toBe(1);
  });

  it('after a connection the service closed (it is done with the request) and a lookup that finds nothing, creates again', async () => {
    const h = harness([closed()], () => Promise.resolve([]));
    await expect(createOnce(h.node, {}, marker, h.run)).resolves.toMatchObject({ id: 'new' });
    expect(h.creates()).toBe(2);
  }, 10_000);

  it('after a 503 the service answered and a lookup that finds nothing, creates again', async () => {
    const h = harness([busy()], () => Promise.resolve([]));
    await expect(createOnce(h.node, {}, marker, h.run)).resolves.toMatchObject({ id: 'new' });
    expect(h.creates()).toBe(2);
  }, 10_000);
});
