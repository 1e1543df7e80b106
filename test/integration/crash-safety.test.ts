import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { prng, runApply } from '../support/apply-child.ts';

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

const namespaces = ['crash-a', 'crash-b'];
const perNamespace = 30;

/** 2 namespaces × 30 networks with a subnet each, 2 security groups with rules: 124 resources. */
function revision(keepEvery = 1): Record<string, string> {
  const files: Record<string, string> = {};
  for (const ns of namespaces) {
    const docs: string[] = [];
    for (let i = 0; i < perNamespace; i += keepEvery) {
      docs.push(`${head('Network', `net-${i}`, ns)}  mtu: 1400\n`);
      docs.push(`${head('Subnet', `sub-${i}`, ns)}  networkRef: {name: net-${i}}\n  cidr: 10.${i}.0.0/24\n`);
    }
    docs.push(`${head('SecurityGroup', 'ssh', ns)}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 10.0.0.0/8}\n`);
    files[`${ns}/all.yaml`] = docs.join('---\n');
  }
  return files;
}



describe('crash safety', () => {
  // Up to 80 rounds, each a cold CLI start and a full observe before its first write, then a full apply: a 600 s
  // budget was not enough on the loaded 2-core test bed.
  it('SIGKILLed at random moments at least 20 times while creating and pruning 124 resources, then run to the end: no duplicates, no orphans', { timeout: 2_400_000 }, async () => {
    writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir, concurrency: 8 }));
    // Replay a failure with KS_CRASH_SEED=<the seed printed>.
    const seed = Number(process.env.KS_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`crash-safety: seed ${seed} (replay with KS_CRASH_SEED=${seed})`);
    const random = prng(seed);
    const rounds: { round: number; delay: number; killed: boolean; writes: number; code: number | null }[] = [];
    // Only kills that land after the round's writes began count: a kill before any write proves nothing.
    const landed = (): number => rounds.filter((r) => r.killed && r.writes > 0).length;
    for (let round = 0; landed() < 20 && round < 80; round++) {
      // Alternate between the full revision and one without two thirds of it, so creates and deletes are both cut.
      ws.remove(`${namespaces[0]}/all.yaml`);
      ws.remove(`${namespaces[1]}/all.yaml`);
      ws.write(round % 4 === 3 ? revision(3) : revision());
      const run = runApply(ws, ['--prune', '--allow-mass-delete']);
      // The clock starts at the round's first logged write (a cold CLI start on the loaded bed can take seconds):
      // the kill lands 0–1.5 s into the writes, or the round ends first (nothing left to do, or done in time).
      const delay = Math.floor(random() * 1500);
      const finished = await Promise.race([run.done.then(() => true), run.firstWrite.then(() => sleep(delay)).then(() => false)]);
      const writes = run.writes();
      if (!finished) run.kill();
      rounds.push({ round, delay, killed: !finished, writes, code: await run.done });
      // Progress on the console too, so a run cut by the timeout still shows how far it got.
      console.log(`crash-safety round ${JSON.stringify(rounds.at(-1))}`);
    }
    const story = `seed ${seed}; rounds:\n${rounds.map((r) => JSON.stringify(r)).join('\n')}\n${ws.log.join('\n')}`;
    expect(landed(), story).toBeGreaterThanOrEqual(20);
    // A round that was not killed ran to its end and succeeded, even right after a kill.
    expect(rounds.filter((r) => !r.killed).map((r) => ({ round: r.round, code: r.code })), story).toEqual(rounds.filter((r) => !r.killed).map((r) => ({ round: r.round, code: 0 })));

    ws.write(revision());
    const final = runApply(ws, ['--prune']);
    expect(await final.done, ws.log.join('\n')).toBe(0);

    const network = ws.cloud.client('network');
    for (const ns of namespaces) {
      const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
      const nets = await network.list<{ name: string }>('/networks', 'networks', { project_id: project!.id });
      const subnets = await network.list<{ name: string; cidr: string }>('/subnets', 'subnets', { project_id: project!.id });
      const groups = await network.list<{ name: string; security_group_rules: { port_range_min: number | null }[] }>('/security-groups', 'security_groups', { project_id: project!.id });
      const want = (prefix: string) => Array.from({ length: perNamespace }, (_, i) => `${prefix}-${i}`).sort();
      expect(nets.map((n) => n.name).sort()).toEqual(want('net'));
      expect(subnets.map((s) => s.name).sort()).toEqual(want('sub'));
      // Neutron gives every project a "default" group of its own; ours is "ssh", exactly once with exactly one port-22 rule.
      const ssh = groups.filter((g) => g.name === 'ssh');
      expect(ssh).toHaveLength(1);
      expect(ssh[0]!.security_group_rules.filter((r) => r.port_range_min === 22)).toHaveLength(1);
      expect(groups.filter((g) => g.name !== 'ssh' && g.name !== 'default')).toEqual([]);
    }
  });
});
