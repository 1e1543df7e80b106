import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { jsonPlan, type JsonPlan } from '../../agent/plan/render/json.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

/**
 * `plan --base` (no cloud, no credentials) against the live plan, and
 * `apply --plan` of a saved plan, fresh and stale, on the real cloud.
 */

const cli = join(import.meta.dirname, '../../agent/cli/main.ts');
let ws: Workspace;
let server: Server;
let url = '';
let configFile = '';

const ns = 'rev';
const base = (): Record<string, string> => ({
  'net.yaml': [
    `${head('Network', 'net', ns)}  description: first\n  mtu: 1400\n`,
    `${head('Subnet', 'sub', ns)}  networkRef: {name: net}\n  cidr: 10.93.0.0/24\n`,
    `${head('Port', 'port', ns)}  networkRef: {name: net}\n`,
  ].join('---\n'),
  'vm.yaml': [
    `${head('Flavor', 'small', ns)}  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('Flavor', 'large', ns)}  vcpus: 2\n  ram: 128\n  disk: 1\n`,
    `${head('Image', 'one', ns)}  diskFormat: raw\n  source:\n    url: {url: "${url}/one.raw"}\n`,
    `${head('Image', 'two', ns)}  diskFormat: raw\n  source:\n    url: {url: "${url}/two.raw"}\n`,
    `${head('VirtualMachine', 'vm', ns)}  flavorRef: {name: small}\n  imageRef: {name: one}\n  networks: [{networkRef: {name: net}}]\n`,
  ].join('---\n'),
  'old.yaml': [`${head('Network', 'old', ns)}  mtu: 1400\n`, `${head('Subnet', 'old-sub', ns)}  networkRef: {name: old}\n  cidr: 10.94.0.0/24\n`].join('---\n'),
});

const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=test@kupenstack.invalid', '-c', 'user.name=test', ...args], { cwd: ws.repo, encoding: 'utf8' });

function run(args: string[], env: NodeJS.ProcessEnv = process.env): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: ws.repo, env, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** What the live plan would do now, as `plan --output json` prints it. */
async function livePlan(prune: boolean): Promise<JsonPlan> {
  const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune, allowMassDelete: false, log: () => undefined });
  expect(outcome.diagnostics).toEqual([]);
  expect(outcome.report!.errors).toEqual([]);
  return jsonPlan(outcome.report!);
}

const actions = (p: JsonPlan): string[] => p.changes.map((c) => `${c.action} ${c.address}`).sort();

beforeAll(async () => {
  ws = new Workspace();
  server = createServer((_req, res) => res.end(Buffer.alloc(32 * 1024, 7)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  configFile = join(ws.dir, 'kupenstack.yaml');
  writeFileSync(configFile, `cloud: ${testCloudName}\nowner: ${ws.owner}\nprojectPrefix: ${ws.config.projectPrefix}\nstateDir: ${ws.config.stateDir}\nreadyTimeoutSeconds: 120\n`);
  git('init', '-q', '-b', 'main');
  ws.write(base());
  git('add', '-A');
  git('commit', '-qm', 'base');
  const applied = await ws.apply();
  expect(applied.report).toMatchObject({ errors: [] });
}, 600_000);
afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('plan --base between two Git revisions', () => {
  it('needs no OpenStack credentials and agrees with the live plan on every action', async () => {
    ws.write({
      'net.yaml': [
        `${head('Network', 'net', ns)}  description: second\n  mtu: 1400\n`, // update
        `${head('Subnet', 'sub', ns)}  networkRef: {name: net}\n  cidr: 10.95.0.0/24\n`, // replace (cidr is immutable)
        `${head('Port', 'port', ns)}  networkRef: {name: net}\n`,
        `${head('Network', 'new', ns)}  mtu: 1400\n`, // create
      ].join('---\n'),
      'vm.yaml': base()['vm.yaml']!.replace('flavorRef: {name: small}\n  imageRef: {name: one}', 'flavorRef: {name: large}\n  imageRef: {name: two}'), // resize + rebuild
    });
    ws.remove('old.yaml'); // delete (with prune)
    git('add', '-A');
    git('commit', '-qm', 'head');

    // No clouds.yaml anywhere it could be found, no OS_* variables.
    const home = mkdtempSync(join(tmpdir(), 'ks-nocreds-'));
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, NO_COLOR: '1' };
    try {
      const offline = run(['plan', '--base', 'HEAD~1', '--prune', '--output', 'json'], env);
      expect(offline.stderr).toBe('');
      expect(offline.code).toBe(2);
      const plan = JSON.parse(offline.stdout) as JsonPlan;
      expect(plan.against).toMatch(/^HEAD~1@sha1:[0-9a-f]{40}$/);
      expect(plan.revision).toMatch(/^HEAD@sha1:[0-9a-f]{40}$/);

      const live = await livePlan(true);
      expect(actions(plan)).toEqual(actions(live));
      expect(actions(plan)).toEqual([
        'create rev/Network/new',
        'delete rev/Network/old',
        'delete rev/Subnet/old-sub',
        'replace rev/Subnet/sub',
        'update rev/Network/net',
        'update rev/VirtualMachine/vm',
      ]);
      const vm = plan.changes.find((c) => c.address === 'rev/VirtualMachine/vm')!;
      expect(vm.destructive).toBe(true);
      expect(vm.reasons.map((r) => r.code)).toContain('root-disk-lost');
      expect(plan.changes.find((c) => c.address === 'rev/Subnet/sub')!.fields.find((f) => f.path === 'cidr')).toMatchObject({ before: '10.93.0.0/24', after: '10.95.0.0/24', forcesReplacement: true });
      expect(plan.summary).toEqual(live.summary);

      // The same without --prune: removed manifests are a warning, not deletions.
      const kept = JSON.parse(run(['plan', '--base', 'HEAD~1', '--output', 'json'], env).stdout) as JsonPlan;
      expect(actions(kept).filter((a) => a.startsWith('delete'))).toEqual([]);
      expect(kept.warnings.join('\n')).toMatch(/2 manifests were removed/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 300_000);

  it('reports an invalid head with the ref, file and line, and a missing ref with the fix', () => {
    ws.write({ 'bad.yaml': `${head('Network', 'bad', ns)}  mtu: lots\n` });
    git('add', '-A');
    git('commit', '-qm', 'bad');
    const bad = run(['plan', '--base', 'HEAD~1']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^HEAD:bad\.yaml:\d+:\d+: error \[schema\./m);
    git('reset', '-q', '--hard', 'HEAD~1');
    const missing = run(['plan', '--base', 'no-such-branch']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/"no-such-branch" is not a branch, tag or commit.*fetch it first/);
  });
});

describe('apply --plan: exactly the saved plan, or nothing', () => {
  it('applies a fresh saved plan and changes exactly what it showed', async () => {
    git('reset', '-q', '--hard', 'HEAD~1'); // back to the applied base
    ws.write({ 'net.yaml': base()['net.yaml']!.replace('description: first', 'description: saved'), 'extra.yaml': `${head('Network', 'extra', ns)}  mtu: 1400\n` });
    const saved = join(ws.dir, 'plan.json');
    const planned = run(['plan', ws.repo, '--config', configFile, '--save', saved, '--output', 'json']);
    expect(planned.code).toBe(2);
    expect(actions(JSON.parse(planned.stdout) as JsonPlan)).toEqual(['create rev/Network/extra', 'update rev/Network/net']);

    // Neutron before and after, read directly: exactly net's description changed (same id: updated, not
    // replaced) and extra appeared; every other network of the project is as it was.
    const network = ws.cloud.client('network');
    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === ns)!;
    type Net = { id: string; name: string; description: string; mtu: number; revision_number: number; updated_at: string };
    const read = async (): Promise<Map<string, Net>> => new Map((await network.list<Net>('/networks', 'networks', { project_id: project.id })).map((n) => [n.name, n]));
    const before = await read();
    expect(before.has('net')).toBe(true);
    expect(before.has('extra')).toBe(false);

    const applied = run(['apply', '--plan', saved, '--config', configFile, '--output', 'json']);
    expect(applied.stderr).not.toMatch(/stale/);
    expect(applied.code).toBe(0);
    expect(JSON.parse(applied.stdout)).toMatchObject({ created: 1, updated: 1, replaced: 0, deleted: 0, errors: [] });

    const after = await read();
    expect([...after.keys()].sort()).toEqual([...before.keys(), 'extra'].sort());
    expect(after.get('net')).toMatchObject({ id: before.get('net')!.id, mtu: before.get('net')!.mtu });
    expect(after.get('net')!.description).toContain('saved');
    expect(before.get('net')!.description).not.toContain('saved');
    expect(after.get('extra')).toMatchObject({ mtu: 1400 });
    const untouched = [...before.keys()].filter((n) => n !== 'net');
    expect(untouched.map((n) => after.get(n))).toEqual(untouched.map((n) => before.get(n)));
    expect((await livePlan(false)).changes).toEqual([]);
  }, 300_000);

  it('refuses a plan made before OpenStack changed, and applies nothing from it', async () => {
    ws.write({ 'late.yaml': `${head('Network', 'late', ns)}  mtu: 1400\n` });
    const saved = join(ws.dir, 'stale.json');
    expect(run(['plan', ws.repo, '--config', configFile, '--save', saved]).code).toBe(2);

    // Someone edits an object of ours outside Git after the plan was made.
    const network = ws.cloud.client('network');
    // Admin lists every project's networks: look only in this workspace's project.
    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === ns)!;
    const [net] = await network.list<{ id: string; description: string }>('/networks', 'networks', { name: 'extra', project_id: project.id });
    expect(net).toBeDefined();
    await network.put(`/networks/${net!.id}`, { network: { mtu: 1300 } });

    const refused = run(['apply', '--plan', saved, '--config', configFile]);
    expect(`${refused.stderr}${refused.stdout}`).toMatch(/the plan is stale: OpenStack changed since it was computed \(rev\/Network\/extra changed; apply would now "update rev\/Network\/extra", which the plan does not show\); nothing was applied\. Run plan again/);
    expect(refused.code).toBe(1);
    expect(await network.list('/networks', 'networks', { name: 'late', project_id: project.id })).toEqual([]);

    // Changed manifests make a saved plan stale too.
    ws.write({ 'late.yaml': `${head('Network', 'late', ns)}  mtu: 1300\n` });
    const fresh = join(ws.dir, 'fresh.json');
    expect(run(['plan', ws.repo, '--config', configFile, '--save', fresh]).code).toBe(2);
    ws.write({ 'late.yaml': `${head('Network', 'late', ns)}  mtu: 1200\n` });
    const edited = run(['apply', '--plan', fresh, '--config', configFile]);
    expect(edited.code).toBe(1);
    expect(edited.stderr).toMatch(/the plan is stale: .*the plan was made for sha256:/);
    expect(await network.list('/networks', 'networks', { name: 'late', project_id: project.id })).toEqual([]);
  }, 300_000);
});
