import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath, type ApplyOutcome } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { ApiCounters } from '../../agent/openstack/counters.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

const namespaceFiles = (names: readonly string[]): Record<string, string> =>
  Object.fromEntries(names.map((ns) => [`${ns}.yaml`, `${head('Network', 'net', ns)}  mtu: 1400\n---\n${head('SecurityGroup', 'sg', ns)}  description: scale\n`]));

async function noop(counters: ApiCounters): Promise<ApplyOutcome> {
  counters.reset();
  return applyPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: true, allowMassDelete: false, counters, log: () => undefined });
}

describe('observation at scale', () => {
  it('lists each kind once per run cloud-wide: the reads of a no-op do not grow with the number of projects', async () => {
    const counters = new ApiCounters();
    ws.write(namespaceFiles(['scale-a', 'scale-b']));
    expect((await ws.apply({ prune: true })).report).toMatchObject({ created: 4, errors: [] });
    const two = await noop(counters);
    expect(two.report).toMatchObject({ created: 0, updated: 0, errors: [] });
    const readsWithTwo = counters.byCollection();

    ws.write(namespaceFiles(['scale-c', 'scale-d', 'scale-e']));
    expect((await ws.apply({ prune: true })).report).toMatchObject({ created: 6, errors: [] });
    const five = await noop(counters);
    expect(five.report).toMatchObject({ created: 0, updated: 0, errors: [] });
    const readsWithFive = counters.byCollection();

    // What Neutron was asked, per collection: once per kind whatever the number of projects.
    expect(readsWithFive['network GET /networks']).toBe(1);
    expect(readsWithFive['network GET /networks']).toBe(readsWithTwo['network GET /networks']);
    expect(readsWithFive['network GET /security-groups']).toBe(readsWithTwo['network GET /security-groups']);
    // Keystone too: one list of the agent's role assignments, not one probe per project.
    expect(five.report!.apiCalls.read).toBe(two.report!.apiCalls.read);
    expect(five.report!.unchanged).toBe(10);
  });

  it('deletes the project of a namespace that left the revision once pruning emptied it, and keeps one that holds a foreign object', async () => {
    const before = new Map((await ownedProjects(ws.cloud, ws.owner)).map((p) => [p.namespace, p.id]));
    expect(before.get('scale-a')).toBeDefined();
    expect(before.get('scale-b')).toBeDefined();
    // Someone else's network in scale-b's project: pruning must not take it, so the project stays.
    const network = ws.cloud.client('network');
    const foreign = await network.post<{ network: { id: string } }>('/networks', { network: { name: 'not-ours', project_id: before.get('scale-b') } });
    ws.remove('scale-a.yaml');
    ws.remove('scale-b.yaml');
    const out = await ws.apply({ prune: true, allowMassDelete: true });
    expect(out.report).toMatchObject({ deleted: 4, errors: [] });

    // Keystone is the witness: scale-a's project is gone, scale-b's is kept with the foreign network in it.
    expect(await ws.cloud.identity.find(`/projects/${before.get('scale-a')}`)).toBeUndefined();
    expect(await ws.cloud.identity.find(`/projects/${before.get('scale-b')}`)).toMatchObject({ project: { id: before.get('scale-b') } });
    expect(await network.find(`/networks/${foreign.network.id}`)).toMatchObject({ network: { name: 'not-ours' } });
    expect(ws.log.some((l) => l.includes('ProjectNotEmpty') || l.includes(`kept project ${ws.owner}-scale-b`))).toBe(true);
    // Listed without a project filter: Neutron makes a project's default group when asked for that project's groups.
    const groupsLeft = (await network.list<{ project_id: string }>('/security-groups', 'security_groups')).filter((g) => g.project_id === before.get('scale-a'));
    expect(groupsLeft).toEqual([]);
    await network.remove(`/networks/${foreign.network.id}`);
  });
});
