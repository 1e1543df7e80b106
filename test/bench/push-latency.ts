import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SyncStatus } from '../../agent/sync/status.ts';
import { AgentProcess, head, TestRepo } from '../support/agent-harness.ts';
import { peers } from '../support/peers.ts';
import type { BenchRow } from './table.ts';

const pushes = 10;

/**
 * `git push` → first OpenStack write, with the webhook: the test bed's Git
 * server runs a post-receive hook that posts a signed Gitea-style push event
 * to the agent. Measured from just before `git push` starts to the moment the
 * agent got the answer to its first write (its `first OpenStack write of the
 * run` log line), over 10 pushes that each add one network.
 */
export async function benchPushLatency(): Promise<BenchRow[]> {
  // prune: true is the default; prune: false shows the cost of observing every kind (what prune needs) before the first write.
  return [...(await measure(true)), ...(await measure(false))];
}

async function measure(prune: boolean): Promise<BenchRow[]> {
  const agent = new AgentProcess();
  const repo = new TestRepo('bench-push');
  const secret = randomUUID();
  const secretFile = join(agent.dir, 'secret');
  writeFileSync(secretFile, secret);
  const latencies: number[] = [];
  try {
    const net = (i: number): string => `${head('Network', `net-${i}`, 'bench')}  mtu: 1400\n`;
    repo.write({ 'bench/net-0.yaml': net(0) });
    let sha = repo.commit('net-0');
    repo.push();
    // Interval long enough that only the webhook can explain a fast apply.
    agent.configure([{ name: 'bench', source: { git: { url: repo.url, ref: { branch: 'main' }, username: peers.git.user, passwordEnv: 'KS_BENCH_GIT_PASSWORD' } }, interval: '30m', retryInterval: '5s', prune, webhook: { secretFile } }]);
    await agent.start({ KS_BENCH_GIT_PASSWORD: peers.git.password });
    repo.installPushHook(`${agent.base}/hooks/bench`, secret);
    const applied = (c: string) => (s: SyncStatus): boolean => s.lastAppliedRevision?.endsWith(c) === true;
    await agent.waitFor('bench', 'first revision', applied(sha), 180_000);

    for (let i = 1; i <= pushes; i++) {
      repo.write({ [`bench/net-${i}.yaml`]: net(i) });
      sha = repo.commit(`net-${i}`);
      const pushedAt = Date.now();
      repo.push();
      await agent.waitFor('bench', `push ${i}`, applied(sha), 120_000);
      const line = agent.lines.find((l) => l.msg === 'first OpenStack write of the run' && typeof l.revision === 'string' && l.revision.endsWith(sha));
      if (!line) throw new Error(`no first-write line for ${sha}:\n${agent.tail()}`);
      latencies.push(Number(line.writeAtMs) - pushedAt);
      // BENCH_TRACE=1: where each push's time went, from the agent's log lines (offsets from the push).
      if (process.env.BENCH_TRACE) {
        const steps = agent.lines.filter((l) => l.time && Date.parse(l.time) >= pushedAt - 50 && Date.parse(l.time) <= Number(line.writeAtMs) + 5);
        process.stderr.write(`push ${i} (prune ${prune}): ${steps.map((l) => `+${Date.parse(l.time) - pushedAt} ${l.msg}`).join(' | ')} | +${Number(line.writeAtMs) - pushedAt} write answered\n`);
      }
    }
    await agent.kill('SIGTERM');
  } finally {
    await agent.dispose(['bench']);
    repo.dispose();
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const median = (sorted[4]! + sorted[5]!) / 2;
  const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
  return [
    {
      name: `git push → first OpenStack write (webhook, prune: ${prune}), median of ${pushes}`,
      ours: `${s(median)} (min ${s(sorted[0]!)}, max ${s(sorted.at(-1)!)})`,
      peer: 'none (issue 16: sub-second push)',
      goal: '≤ 0.5 s (median)',
      met: median <= 500,
    },
  ];
}
