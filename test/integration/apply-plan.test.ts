import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../agent/act/projects.ts';
import type { SavedPlan } from '../../agent/plan/saved.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

/**
 * `apply --plan FILE` executes the saved plan only when a fresh decision
 * gives exactly its changes (Terraform's "inconsistent final plan"): here the
 * saved plan says one thing and apply would do another, so nothing is written.
 */

const cli = join(import.meta.dirname, '../../agent/cli/main.ts');
let ws: Workspace;
let configFile = '';

function run(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: ws.dir, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  ws = new Workspace();
  configFile = join(ws.dir, 'kupenstack.yaml');
  writeFileSync(configFile, `cloud: ${testCloudName}\nowner: ${ws.owner}\nprojectPrefix: ${ws.config.projectPrefix}\nstateDir: ${ws.config.stateDir}\n`);
});
afterAll(async () => {
  await ws.dispose();
});

describe('apply --plan refuses a change that is no longer what it planned', () => {
  it('names the address, exits 1, and writes nothing to OpenStack (not even the project)', async () => {
    ws.write({ 'net.yaml': `${head('Network', 'planned', 'saved-plan')}  mtu: 1400\n` });
    const file = join(ws.dir, 'plan.json');
    expect(run(['plan', ws.repo, '--config', configFile, '--save', file]).code).toBe(2);

    // The saved plan now says something else than apply would do (a hand edit, or a planner that disagrees with itself).
    const saved = JSON.parse(readFileSync(file, 'utf8')) as SavedPlan;
    const mtu = saved.plan.changes[0]!.fields.find((f) => f.path === 'mtu')!;
    expect(mtu.after).toBe(1400);
    mtu.after = 1450;
    writeFileSync(file, JSON.stringify(saved));

    const writes = ws.cloud.counters.write;
    const refused = run(['apply', '--plan', file, '--config', configFile]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/the plan is stale: .*planned "create saved-plan\/Network\/planned" is no longer what apply would do.*nothing was applied/);
    expect(ws.cloud.counters.write).toBe(writes);
    // Read Keystone and Neutron: no project for the namespace, no network of that name anywhere.
    expect((await ownedProjects(ws.cloud, ws.owner)).map((p) => p.namespace)).toEqual([]);
    expect(await ws.cloud.client('network').list('/networks', 'networks', { name: 'planned', description: undefined }).then((nets) => nets.filter((n) => JSON.stringify(n).includes(ws.owner)))).toEqual([]);

    // The untouched plan applies.
    expect(run(['plan', ws.repo, '--config', configFile, '--save', file]).code).toBe(2);
    const applied = run(['apply', '--plan', file, '--config', configFile, '--output', 'json']);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout)).toMatchObject({ created: 1, errors: [] });
  }, 300_000);
});
