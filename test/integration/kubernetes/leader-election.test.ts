import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector } from '../../../agent/controller/leases/leader.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * agent/controller/leases/leader.ts on the real API server: electors in child processes (so a leader can be
 * killed with SIGKILL) contend for one Lease; every line they print is timestamped, and the test
 * checks from those timestamps that two never act at once.
 */

const ns = `ks-lease-${randomBytes(3).toString('hex')}`;
const leaseMs = 3_000;
const renewMs = 2_000;
const retryMs = 500;
const fixture = join(import.meta.dirname, 'fixtures/elector.ts');

interface Line { id: string; ev: string; t: number }
interface Elector { id: string; child: ChildProcess; lines: Line[] }
const running: Elector[] = [];

function elector(id: string, lease: string): Elector {
  const child = spawn(process.execPath, [fixture, kube.kubeconfig, ns, lease, id, String(leaseMs), String(renewMs), String(retryMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const e: Elector = { id, child, lines: [] };
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      e.lines.push(JSON.parse(buffer.slice(0, i)) as Line);
      buffer = buffer.slice(i + 1);
    }
  });
  running.push(e);
  return e;
}
const leading = (e: Elector): boolean => e.lines.filter((l) => l.ev === 'leader' || l.ev === 'follower').at(-1)?.ev === 'leader';
const acts = (e: Elector): number[] => e.lines.filter((l) => l.ev === 'act').map((l) => l.t);
const first = (e: Elector, ev: string, after = 0): number | undefined => e.lines.find((l) => l.ev === ev && l.t >= after)?.t;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  await kubectlOk(['create', 'namespace', ns]);
});
afterAll(async () => {
  for (const e of running) if (e.child.exitCode === null && e.child.signalCode === null) e.child.kill('SIGKILL');
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
});

describe('leader election on a coordination.k8s.io/v1 Lease', () => {
  it('two electors: exactly one leads; SIGKILL of the leader → the other leads within the lease duration, never both at once', async () => {
    const a = elector('a', 'kill');
    const b = elector('b', 'kill');
    await expect.poll(() => leading(a) || leading(b), { timeout: 10_000, interval: 100 }).toBe(true);
    await sleep(3 * retryMs * 2); // several renewals: the follower stays a follower
    expect([leading(a), leading(b)].filter(Boolean)).toHaveLength(1);
    const [leader, other] = leading(a) ? [a, b] : [b, a];
    expect(acts(other)).toEqual([]);
    const holder = JSON.parse(await kubectlOk(['-n', ns, 'get', 'lease', 'kill', '-o', 'json'])) as { spec: { holderIdentity: string; leaseDurationSeconds: number } };
    expect(holder.spec.holderIdentity).toBe(`${leader.id}_${leader.child.pid}`);
    expect(holder.spec.leaseDurationSeconds).toBe(leaseMs / 1000);

    const killed = Date.now();
    leader.child.kill('SIGKILL');
    await expect.poll(() => leading(other), { timeout: leaseMs + 5_000, interval: 50 }).toBe(true);
    const takeover = first(other, 'leader')! - killed;
    // Within the lease duration counted from the last renewal, plus one retry period (with jitter) to notice.
    expect(takeover).toBeLessThanOrEqual(leaseMs + retryMs * 1.2 + 500);
    expect(Math.min(...acts(other))).toBeGreaterThan(Math.max(...acts(leader)));
    console.log(`[leader] takeover after SIGKILL: ${takeover} ms (lease ${leaseMs} ms)`);
  }, 60_000);

  it('a leader cut off from the API server reports not-leader (and resets) before the other acquires and acts', async () => {
    const a = elector('a', 'partition');
    await expect.poll(() => leading(a), { timeout: 10_000, interval: 100 }).toBe(true);
    const b = elector('b', 'partition');
    await sleep(2 * retryMs);
    expect(leading(b)).toBe(false);
    a.child.stdin!.write('partition\n');
    await expect.poll(() => leading(b), { timeout: leaseMs + 5_000, interval: 50 }).toBe(true);
    await sleep(500);
    const cut = first(a, 'partitioned')!;
    const demoted = first(a, 'follower', cut)!;
    const reset = first(a, 'reset', cut)!;
    const acquired = first(b, 'leader')!;
    expect(demoted).toBeDefined();
    expect(reset).toBeDefined();
    // No overlap in time: the old leader's last act and its demotion come before the new leader's first act.
    expect(demoted).toBeLessThan(acquired);
    expect(Math.max(...acts(a))).toBeLessThan(Math.min(...acts(b)));
    expect(demoted - cut).toBeLessThanOrEqual(renewMs + 500); // the deadline, plus the 50 ms poll and a loaded machine
    expect(acquired - cut).toBeGreaterThanOrEqual(renewMs);
    console.log(`[leader] partition: demoted after ${demoted - cut} ms, other leads after ${acquired - cut} ms, gap ${acquired - demoted} ms`);
  }, 60_000);

  it('a stopping leader releases the lease: the other acquires at once, not after the lease duration', async () => {
    const a = elector('a', 'release');
    await expect.poll(() => leading(a), { timeout: 10_000, interval: 100 }).toBe(true);
    const b = elector('b', 'release');
    await sleep(2 * retryMs);
    const stopped = Date.now();
    a.child.stdin!.write('stop\n');
    await expect.poll(() => leading(b), { timeout: leaseMs + 5_000, interval: 50 }).toBe(true);
    expect(first(b, 'leader')! - stopped).toBeLessThan(leaseMs);
    expect(Math.max(...acts(a))).toBeLessThan(Math.min(...acts(b)));
  }, 60_000);
});

describe('isLeader() on its own clock (audit W6)', () => {
  it('answers false the moment the renew deadline has passed, before the elector ticks again, and says why', async () => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kube.kubeconfig);
    // The elector's clock is the test's: it moves only when the test says. Its real timer ticks once (the
    // acquire) and next after retryPeriod, 100 s away, so no renew or failed renew can demote it here.
    let clock = Date.now();
    const log: string[] = [];
    let stopped = 0;
    const elector = new LeaderElector({
      coordination: kc.makeApiClient(k8s.CoordinationV1Api), namespace: ns, name: 'clock', identity: 'clocked',
      leaseDurationMs: 400_000, renewDeadlineMs: 300_000, retryPeriodMs: 100_000, now: () => clock,
      onStoppedLeading: () => void stopped++, log: (l) => log.push(l),
    });
    elector.start();
    try {
      await expect.poll(() => elector.isLeader(), { timeout: 10_000, interval: 50 }).toBe(true);
      const renewedAt = clock;
      clock = renewedAt + 299_999;
      expect(elector.isLeader(), 'just inside the renew deadline').toBe(true);
      clock = renewedAt + 300_000;
      expect(elector.isLeader(), 'at the renew deadline, with no tick since').toBe(false);
      expect(stopped).toBe(1);
      expect(log.at(-1)).toBe(`leader  clocked lost lease ${ns}/clock (renew deadline passed)`);
    } finally {
      await elector.stop();
    }
  });
});
