import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestHead as head, Workspace } from '../support/apply.ts';

let ws: Workspace;
const leftovers: string[] = [];
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  for (const id of leftovers) await ws.cloud.client('network').remove(`/networks/${id}`);
  await ws.dispose();
});

describe('import and onDelete: detach', () => {
  it('an unmanaged import is found by filter, used, and never written to', async () => {
    ws.write({ 'ext.yaml': `${head('Network', 'public', 'imp')}  managementPolicy: unmanaged\n  import:\n    filter: {name: public}\n  mtu: 9000\n` });
    const [before] = await ws.cloud.client('network').list<{ id: string; mtu: number; description: string }>('/networks', 'networks', { name: 'public' });
    const r = await ws.apply();
    expect(r.report).toMatchObject({ created: 0, updated: 0, errors: [] });
    expect(r.report!.apiCalls.write).toBe(2); // the project and the agent's role in it; nothing on the network
    const [after] = await ws.cloud.client('network').list<{ id: string; mtu: number; description: string }>('/networks', 'networks', { name: 'public' });
    expect(after).toEqual(before);
    // Found is Ready (a Sync's wait counts it): the state shows the imported id, with reason Imported.
    const state = JSON.parse(readFileSync(join(ws.config.stateDir, `${ws.owner}.json`), 'utf8')) as { resources: Record<string, { id?: string; conditions?: { type: string; status: string; reason: string; message: string }[] }> };
    const imported = state.resources['imp/Network/public'];
    expect(imported?.id).toBe(before!.id);
    expect(imported?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Imported', message: expect.stringMatching(new RegExp(`^imported ${before!.id} at `)) as unknown });
  });

  it('an import filter that matches nothing is an error naming the fix', async () => {
    ws.write({ 'ext.yaml': `${head('Network', 'nope', 'imp')}  managementPolicy: unmanaged\n  import:\n    filter: {name: no-such-network}\n` });
    const r = await ws.apply();
    expect(r.report!.errors.map((e) => [e.address, e.code])).toEqual([['imp/Network/nope', 'import.ambiguous']]);
    expect(r.report!.errors[0]!.message).toMatch(/matches 0 objects; it must match exactly one/);
  });

  it('a network declared with onDelete: detach is left in OpenStack when removed from Git', async () => {
    ws.write({ 'ext.yaml': `${head('Network', 'keep-me', 'imp')}  onDelete: detach\n  mtu: 1400\n---\n${head('Network', 'drop-me', 'imp')}  mtu: 1400\n---\n${head('Network', 'stay', 'imp')}  mtu: 1400\n---\n${head('Network', 'stay2', 'imp')}  mtu: 1400\n` });
    expect((await ws.apply()).report).toMatchObject({ created: 4, errors: [] });
    ws.write({ 'ext.yaml': `${head('Network', 'stay', 'imp')}  mtu: 1400\n---\n${head('Network', 'stay2', 'imp')}  mtu: 1400\n` });
    const r = await ws.apply({ prune: true });
    expect(r.report).toMatchObject({ deleted: 1, errors: [] });
    expect(r.report!.warnings.join('\n')).toMatch(/imp\/Network\/keep-me: no longer declared and left in OpenStack \(onDelete: detach\)/);
    const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-imp` });
    const nets = await ws.cloud.client('network').list<{ id: string; name: string }>('/networks', 'networks', { project_id: project!.id });
    expect(nets.map((n) => n.name).sort()).toEqual(['keep-me', 'stay', 'stay2']);
    leftovers.push(nets.find((n) => n.name === 'keep-me')!.id);
  });
});
