import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangedPath } from '../../agent/act/apply.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

let ws: Workspace;
const snapshots = mkdtempSync(join(tmpdir(), 'ks-fast-'));
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
  rmSync(snapshots, { recursive: true, force: true });
});

const net = (name: string): Record<string, string> => ({ [`fast/${name}.yaml`]: `${head('Network', name, 'fast')}  mtu: 1400\n` });
const fast = (since: string) => applyChangedPath({ path: ws.repo, since, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: (l) => ws.log.push(l) });

async function networks(): Promise<string[]> {
  const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'fast')!;
  return (await ws.cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project.id })).map((n) => n.name).sort();
}

describe('sub-second push: the changed manifests first, then the full pass', () => {
  it('writes only what changed, deletes nothing, leaves drift to the full pass, and writes nothing from a bad revision', async () => {
    ws.write({ ...net('net-a'), ...net('net-b') });
    expect((await ws.apply({ prune: true })).report).toMatchObject({ created: 2, errors: [] });
    const since = join(snapshots, 'rev-1');
    cpSync(ws.repo, since, { recursive: true });

    // Drift outside Git: net-a deleted by hand. The new revision adds net-c and drops net-b.
    const network = ws.cloud.client('network');
    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'fast')!;
    const [netA] = await network.list<{ id: string }>('/networks', 'networks', { project_id: project.id, name: 'net-a' });
    await network.remove(`/networks/${netA!.id}`);
    ws.remove('fast/net-b.yaml');
    ws.write(net('net-c'));

    const first = await fast(since);
    expect(first).toMatchObject({ changed: 1, report: { created: 1, deleted: 0, errors: [] } });
    // Neutron after the fast pass: net-c is there, net-b is not deleted yet, net-a is not back yet.
    expect(await networks()).toEqual(['net-b', 'net-c']);

    // The full pass: the hand-deleted net-a comes back, net-b goes.
    expect((await ws.apply({ prune: true })).report).toMatchObject({ created: 1, deleted: 1, errors: [] });
    expect(await networks()).toEqual(['net-a', 'net-c']);

    // A bad revision (a second error beside a new network): the fast pass writes nothing.
    const since2 = join(snapshots, 'rev-2');
    cpSync(ws.repo, since2, { recursive: true });
    ws.write({ ...net('net-d'), 'fast/bad.yaml': `${head('Network', 'bad', 'fast')}  mtu: lots\n` });
    expect(await fast(since2)).toEqual({ skipped: 'the revision does not validate (the full pass reports why)' });
    expect(await networks()).toEqual(['net-a', 'net-c']);
    ws.remove('fast/bad.yaml');
    ws.remove('fast/net-d.yaml');
  });
});
