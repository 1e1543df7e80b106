import { describe, expect, it } from 'vitest';
import { deletionOrder, nextStep, shapeOf, type ListenerShape, type MemberShape, type ObservedListener, type Step } from '../../agent/kinds/loadbalancer/tree.ts';

/*
 * The order of a load balancer's changes, played against an Octavia kept in
 * memory: each step is applied as Octavia would (new ids, ACTIVE), and the
 * next one is asked for until there is none. What the real Octavia does with
 * them is test/integration/kinds/loadbalancer.test.ts.
 */

const monitor = { type: 'HTTP', delay: 5, timeout: 3, max_retries: 3, max_retries_down: 3, url_path: '/', expected_codes: '200', http_method: 'GET' };
const member = (name: string, address: string, weight = 1): MemberShape => ({ name, address, protocol_port: 8080, weight, subnet_id: 'sub' });
const web = (port: number, members = [member('a', '10.0.0.11'), member('b', '10.0.0.12')]): ListenerShape => ({
  name: 'web',
  protocol: 'HTTP',
  protocol_port: port,
  connection_limit: -1,
  pool: { protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members, healthmonitor: monitor },
});

let nextId = 0;
const id = (what: string): string => `${what}-${++nextId}`;
const active = { provisioning_status: 'ACTIVE', operating_status: 'ONLINE' };

/** Octavia in memory: what the step does to the tree. */
function apply(tree: ObservedListener[], step: Step): ObservedListener[] {
  const pools = tree.map((l) => l.pool).filter((p) => p !== null);
  if (step.op === 'delete') {
    if (step.what === 'listener') {
      const l = tree.find((x) => x.id === step.id)!;
      if (l.pool) throw new Error('Octavia refuses to delete a listener that still has its default pool');
      return tree.filter((x) => x.id !== step.id);
    }
    for (const l of tree) {
      if (step.what === 'pool' && l.pool?.id === step.id) {
        if (l.pool.members.length || l.pool.healthmonitor) throw new Error('children first: the pool still has members or a monitor');
        l.pool = null;
      }
      if (step.what === 'healthmonitor' && l.pool?.healthmonitor?.id === step.id) l.pool.healthmonitor = null;
      if (step.what === 'member' && l.pool?.id === step.poolId) l.pool.members = l.pool.members.filter((m) => m.id !== step.id);
    }
    return tree;
  }
  if (step.op === 'create') {
    if (step.what === 'listener') {
      const { pool: _pool, ...shape } = step.listener;
      return [...tree, { id: id('listener'), ...active, shape, pool: null }];
    }
    if (step.what === 'pool') {
      tree.find((l) => l.id === step.listenerId)!.pool = { id: id('pool'), ...active, shape: { protocol: step.pool.protocol, lb_algorithm: step.pool.lb_algorithm }, members: [], healthmonitor: null };
      return tree;
    }
    const pool = pools.find((p) => p.id === step.poolId)!;
    if (step.what === 'healthmonitor') pool.healthmonitor = { id: id('monitor'), ...active, shape: step.monitor };
    else pool.members.push({ id: id('member'), ...active, shape: step.member });
    return tree;
  }
  if (step.what === 'member') {
    const m = pools.flatMap((p) => p.members).find((x) => x.id === step.id)!;
    m.shape = { ...m.shape, ...step.body };
  }
  if (step.what === 'listener') {
    const l = tree.find((x) => x.id === step.id)!;
    l.shape = { ...l.shape, ...step.body };
  }
  return tree;
}

/** Every step until converged, each described as `op what`. */
function play(tree: ObservedListener[], desired: ListenerShape[]): { steps: string[]; tree: ObservedListener[] } {
  const steps: string[] = [];
  for (let step = nextStep(tree, desired); step; step = nextStep(tree, desired)) {
    steps.push(`${step.op} ${step.what}`);
    tree = apply(tree, step);
    if (steps.length > 50) throw new Error(`no convergence: ${steps.join(', ')}`);
  }
  return { steps, tree };
}

const built = (desired: ListenerShape[]): ObservedListener[] => play([], desired).tree;

describe('a load balancer tree, one Octavia change at a time', () => {
  it('is built parents first: listener, pool, monitor, then each member', () => {
    const { steps, tree } = play([], [web(80)]);
    expect(steps).toEqual(['create listener', 'create pool', 'create healthmonitor', 'create member', 'create member']);
    expect(shapeOf(tree)).toEqual([web(80)]);
    expect(nextStep(tree, [web(80)])).toBeUndefined();
  });

  it('a removed member is the only thing deleted', () => {
    const tree = built([web(80)]);
    const b = tree[0]!.pool!.members.find((m) => m.shape.name === 'b')!;
    expect(nextStep(tree, [web(80, [member('a', '10.0.0.11')])])).toEqual({ op: 'delete', what: 'member', poolId: tree[0]!.pool!.id, id: b.id, why: 'member b of listener web: no longer declared' });
    expect(play(tree, [web(80, [member('a', '10.0.0.11')])]).steps).toEqual(['delete member']);
  });

  it('a weight is changed in place, on the same member', () => {
    const tree = built([web(80)]);
    const a = tree[0]!.pool!.members.find((m) => m.shape.name === 'a')!;
    const step = nextStep(tree, [web(80, [member('a', '10.0.0.11', 5), member('b', '10.0.0.12')])]);
    expect(step).toMatchObject({ op: 'update', what: 'member', id: a.id, body: { weight: 5 } });
  });

  it('a new listener port (Octavia cannot change it) takes the children down first, then builds again', () => {
    const { steps, tree } = play(built([web(80)]), [web(8080)]);
    expect(steps).toEqual([
      'delete member',
      'delete member',
      'delete healthmonitor',
      'delete pool',
      'delete listener',
      'create listener',
      'create pool',
      'create healthmonitor',
      'create member',
      'create member',
    ]);
    expect(shapeOf(tree)).toEqual([web(8080)]);
  });

  it('a child in ERROR is deleted and made again', () => {
    const tree = built([web(80)]);
    const a = tree[0]!.pool!.members.find((m) => m.shape.name === 'a')!;
    a.provisioning_status = 'ERROR';
    expect(play(tree, [web(80)]).steps).toEqual(['delete member', 'create member']);
  });

  it('a prune deletes members, monitors, pools, then listeners', () => {
    const tree = built([web(80), { ...web(81), name: 'alt' }]);
    expect(deletionOrder(tree).map((s) => `${s.op} ${s.what}`)).toEqual([
      ...Array<string>(4).fill('delete member'),
      'delete healthmonitor',
      'delete healthmonitor',
      'delete pool',
      'delete pool',
      'delete listener',
      'delete listener',
    ]);
    let left = tree;
    for (const step of deletionOrder(tree)) left = apply(left, step);
    expect(left).toEqual([]);
  });
});
