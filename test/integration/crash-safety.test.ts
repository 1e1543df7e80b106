import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

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

function runApply(args: string[]): { kill: () => void; done: Promise<number | null> } {
  const child = spawn(process.execPath, ['agent/cli/main.ts', 'apply', ws.repo, '--cloud', testCloudName, '--config', join(ws.dir, 'kupenstack.yaml'), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const done = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    kill: () => child.kill('SIGKILL'),
    done: done.then((code) => {
      if (code !== null && code !== 0) ws.log.push(stderr);
      return code;
    }),
  };
}

describe('crash safety', () => {
  it('SIGKILLed at random moments at least 20 times while creating and pruning 124 resources, then run to the end: no duplicates, no orphans', async () => {
    writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir, concurrency: 8 }));
    let kills = 0;
    for (let round = 0; kills < 20 && round < 60; round++) {
      // Alternate between the full revision and one without two thirds of it, so creates and deletes are both cut.
      ws.remove(`${namespaces[0]}/all.yaml`);
      ws.remove(`${namespaces[1]}/all.yaml`);
      ws.write(round % 4 === 3 ? revision(3) : revision());
      const run = runApply(['--prune', '--allow-mass-delete']);
      const delay = 300 + Math.floor(Math.random() * 2500);
      const finished = await Promise.race([run.done.then(() => true), sleep(delay).then(() => false)]);
      if (!finished) {
        run.kill();
        kills++;
      }
      await run.done;
    }
    expect(kills).toBeGreaterThanOrEqual(20);

    ws.write(revision());
    const final = runApply(['--prune']);
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
