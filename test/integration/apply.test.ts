import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCloudName } from '../support/context.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

interface NeutronNet {
  id: string;
  name: string;
  mtu: number;
  project_id: string;
  description: string;
}

async function networksOf(projectName: string): Promise<NeutronNet[]> {
  const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: projectName });
  if (!project) return [];
  return ws.cloud.client('network').list<NeutronNet>('/networks', 'networks', { project_id: project.id });
}

describe('kupenstack apply (the engine, against the real cloud)', () => {
  it('creates declared networks in the namespace\'s own project, then a second apply writes nothing', async () => {
    ws.write({
      'a/nets.yaml': `${head('Network', 'front', 'alpha')}  mtu: 1400\n---\n${head('Network', 'back', 'alpha')}  mtu: 1450\n  tags: [db]\n`,
      'b/nets.yaml': `${head('Network', 'front', 'beta')}  mtu: 1300\n`,
    });
    const first = await ws.apply();
    expect(first.diagnostics).toEqual([]);
    expect(first.report).toMatchObject({ created: 3, errors: [] });

    const alpha = await networksOf(`${ws.owner}-alpha`);
    expect(alpha.map((n) => [n.name, n.mtu]).sort()).toEqual([['back', 1450], ['front', 1400]]);
    const beta = await networksOf(`${ws.owner}-beta`);
    expect(beta.map((n) => n.name)).toEqual(['front']);
    expect(alpha[0]!.project_id).not.toBe(beta[0]!.project_id);

    const second = await ws.apply();
    expect(second.report).toMatchObject({ created: 0, updated: 0, unchanged: 3, errors: [] });
    expect(second.report!.apiCalls.write).toBe(0);
  });

  it('the CLI prints exactly one JSON object on stdout, progress on stderr, and exits 0 when converged', () => {
    writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir }));
    const r = spawnSync(process.execPath, ['agent/cli/main.ts', 'apply', ws.repo, '--cloud', testCloudName, '-c', join(ws.dir, 'kupenstack.yaml'), '-o', 'json'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(['revision', 'created', 'updated', 'replaced', 'deleted', 'healed', 'unchanged', 'held', 'errors', 'apiCalls']);
    expect(out).toMatchObject({ created: 0, unchanged: 3, held: [], errors: [], apiCalls: { write: 0 } });
    expect(out.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  it('corrects mutable drift made outside Git', async () => {
    const [front] = (await networksOf(`${ws.owner}-alpha`)).filter((n) => n.name === 'front');
    await ws.cloud.client('network').put(`/networks/${front!.id}`, { network: { mtu: 1200 } });
    const r = await ws.apply();
    expect(r.report).toMatchObject({ updated: 1, errors: [] });
    expect(r.report!.drift).toEqual([{ address: 'alpha/Network/front', path: 'mtu', expected: 1400, actual: 1200, immutable: false }]);
    expect((await networksOf(`${ws.owner}-alpha`)).find((n) => n.name === 'front')!.mtu).toBe(1400);
  });

  it('never touches an unmarked network with the same name, and prunes exactly what was removed from Git', async () => {
    const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-alpha` });
    const foreign = await ws.cloud.client('network').post<{ network: { id: string } }>('/networks', { network: { name: 'back', project_id: project!.id, mtu: 1280 } });
    ws.write({ 'a/nets.yaml': `${head('Network', 'front', 'alpha')}  mtu: 1400\n` });
    const r = await ws.apply({ prune: true });
    expect(r.report).toMatchObject({ deleted: 1, errors: [], held: [] });
    const alpha = await networksOf(`${ws.owner}-alpha`);
    expect(alpha.map((n) => n.id).sort()).toEqual([foreign.network.id, alpha.find((n) => n.name === 'front')!.id].sort());
    expect(alpha.find((n) => n.id === foreign.network.id)!.mtu).toBe(1280);
    await ws.cloud.client('network').remove(`/networks/${foreign.network.id}`);
  });

  it('holds a revision that deletes more than half of what it owns, until confirmed', async () => {
    ws.remove('a/nets.yaml');
    ws.remove('b/nets.yaml');
    ws.write({ 'b/other.yaml': `${head('Network', 'keep', 'beta')}  mtu: 1400\n` });
    const held = await ws.apply({ prune: true });
    expect(held.report!.held.map((h) => h.address).sort()).toEqual(['alpha/Network/front', 'beta/Network/front']);
    expect(held.report!.deleted).toBe(0);
    expect((await networksOf(`${ws.owner}-alpha`)).length).toBe(1);
    const confirmed = await ws.apply({ prune: true, allowMassDelete: true });
    expect(confirmed.report).toMatchObject({ deleted: 2, held: [], errors: [] });
    expect(await networksOf(`${ws.owner}-alpha`)).toEqual([]);
  });

  it('applies nothing from a revision with one invalid file', async () => {
    ws.write({ 'b/bad.yaml': `${head('Network', 'bad', 'beta')}  mtu: 99999\n`, 'b/new.yaml': `${head('Network', 'new', 'beta')}  mtu: 1400\n` });
    const writes = ws.cloud.counters.write;
    const r = await ws.apply();
    expect(r.report).toBeUndefined();
    expect(r.diagnostics.map((d) => [d.code, d.file.endsWith('b/bad.yaml'), d.line])).toEqual([['schema.range', true, 7]]);
    expect(ws.cloud.counters.write).toBe(writes);
    expect((await networksOf(`${ws.owner}-beta`)).map((n) => n.name)).toEqual(['keep']);
    ws.remove('b/bad.yaml');
    ws.remove('b/new.yaml');
  });
});
