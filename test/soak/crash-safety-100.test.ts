import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../agent/act/projects.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { prng, runApply } from '../support/apply-child.ts';

/**
 * Issue 16 item 2: `kill -9` at random moments, 100 times, while `kupenstack
 * apply` creates, changes and prunes 200 resources across 5 projects; then a
 * run to the end. The cloud, listed directly, holds every declared object
 * exactly once and nothing else of ours. KS_CRASH_KILLS changes the number
 * of kills (default 100), KS_CRASH_SEED replays a run.
 */
const kills = Number(process.env.KS_CRASH_KILLS ?? 100);
// A round costs 10–30 s on the shared 2-core bed (a cold CLI start, the observe, the writes) and about 1.5 rounds land a kill: 100 kills need more than an hour.
const namespaces = ['kill-a', 'kill-b', 'kill-c', 'kill-d', 'kill-e'];
/** Per namespace: 16 networks with a subnet each, 4 security groups with a rule, 4 ports: 40; × 5 = 200. */
const perNamespace = { networks: 16, groups: 4, ports: 4 };

function revision(keepEvery = 1): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [n, ns] of namespaces.entries()) {
    const docs: string[] = [];
    for (let i = 0; i < perNamespace.networks; i += keepEvery) {
      docs.push(`${head('Network', `net-${i}`, ns)}  mtu: 1400\n`);
      docs.push(`${head('Subnet', `sub-${i}`, ns)}  networkRef: {name: net-${i}}\n  cidr: 10.${n * 20 + i}.0.0/24\n`);
    }
    for (let i = 0; i < perNamespace.groups; i += keepEvery) docs.push(`${head('SecurityGroup', `sg-${i}`, ns)}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: ${22 + i}, portRangeMax: ${22 + i}, remoteIPPrefix: 10.0.0.0/8}\n`);
    for (let i = 0; i < perNamespace.ports; i += keepEvery) docs.push(`${head('Port', `port-${i}`, ns)}  networkRef: {name: net-${i}}\n`);
    files[`${ns}/all.yaml`] = docs.join('---\n');
  }
  return files;
}

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
}, 1_200_000);


describe('crash safety at scale', () => {
  it(`SIGKILLed ${kills} times at random moments while creating, changing and pruning 200 resources in 5 projects: no duplicates, no orphans`, { timeout: Math.max(3_600_000, kills * 90_000) }, async () => {
    writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir, concurrency: 8 }));
    const seed = Number(process.env.KS_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`crash-safety-100: seed ${seed} (replay with KS_CRASH_SEED=${seed})`);
    const random = prng(seed);
    const rounds: { round: number; delay: number; killed: boolean; writes: number; code: number | null }[] = [];
    const landed = (): number => rounds.filter((r) => r.killed && r.writes > 0).length;
    for (let round = 0; landed() < kills && round < kills * 3; round++) {
      for (const ns of namespaces) ws.remove(`${ns}/all.yaml`);
      // Mostly the full revision; every fourth round a third of it, so prunes are cut too.
      ws.write(round % 4 === 3 ? revision(3) : revision());
      const run = runApply(ws, ['--prune', '--allow-mass-delete']);
      // The kill lands 0–1 s after the round's first write (a cold start on the loaded bed takes seconds before it).
      const delay = Math.floor(random() * 1000);
      const finished = await Promise.race([run.done.then(() => true), run.firstWrite.then(() => sleep(delay)).then(() => false)]);
      const writes = run.writes();
      if (!finished) run.kill();
      rounds.push({ round, delay, killed: !finished, writes, code: await run.done });
      if (round % 10 === 0) console.log(`crash-safety-100 round ${round}: ${landed()} kills landed`);
    }
    const story = `seed ${seed}; rounds:\n${rounds.map((r) => JSON.stringify(r)).join('\n')}\n${ws.log.join('\n')}`;
    expect(landed(), story).toBeGreaterThanOrEqual(kills);
    expect(rounds.filter((r) => !r.killed).map((r) => ({ round: r.round, code: r.code })), story).toEqual(rounds.filter((r) => !r.killed).map((r) => ({ round: r.round, code: 0 })));

    for (const ns of namespaces) ws.remove(`${ns}/all.yaml`);
    ws.write(revision());
    const final = runApply(ws, ['--prune']);
    expect(await final.done, ws.log.join('\n')).toBe(0);

    const projects = await ownedProjects(ws.cloud, ws.owner);
    expect(projects.map((p) => p.namespace).sort()).toEqual([...namespaces].sort());
    const network = ws.cloud.client('network');
    const want = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`).sort();
    for (const p of projects) {
      const nets = await network.list<{ name: string }>('/networks', 'networks', { project_id: p.id });
      const subnets = await network.list<{ name: string }>('/subnets', 'subnets', { project_id: p.id });
      const groups = await network.list<{ name: string; security_group_rules: { port_range_min: number | null }[] }>('/security-groups', 'security_groups', { project_id: p.id });
      const ports = await network.list<{ name: string; device_owner: string }>('/ports', 'ports', { project_id: p.id });
      expect(nets.map((n) => n.name).sort(), p.namespace).toEqual(want('net', perNamespace.networks));
      expect(subnets.map((s) => s.name).sort(), p.namespace).toEqual(want('sub', perNamespace.networks));
      expect(ports.filter((x) => x.device_owner === '').map((x) => x.name).sort(), p.namespace).toEqual(want('port', perNamespace.ports));
      const ours = groups.filter((g) => g.name !== 'default');
      expect(ours.map((g) => g.name).sort(), p.namespace).toEqual(want('sg', perNamespace.groups));
      for (const g of ours) expect(g.security_group_rules.filter((r) => r.port_range_min !== null), `${p.namespace} ${g.name}`).toHaveLength(1);
    }
  });
});
