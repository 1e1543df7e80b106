import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyChangedPath, applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { ApiCounters } from '../../agent/openstack/counters.ts';
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

describe("the fast pass with the agent's long-lived client", () => {
  it('asks Keystone nothing the last full pass already saw, and still writes what changed', async () => {
    // One client for every run, as the agent keeps one per Sync.
    const counters = new ApiCounters();
    const client = OpenStackCloud.fromCloudsYaml(testCloudName, undefined, counters);
    const run = { cloud: testCloudName, config: ws.config, allowMassDelete: false, log: (l: string) => ws.log.push(l), openstack: client, counters };
    const warm = { 'warm/net-w1.yaml': `${head('Network', 'net-w1', 'warm')}  mtu: 1400\n` };
    ws.write(warm);
    expect((await applyPath({ ...run, path: ws.repo, prune: false })).report).toMatchObject({ errors: [] });
    const since = join(snapshots, 'warm-1');
    cpSync(ws.repo, since, { recursive: true });

    ws.write({ 'warm/net-w2.yaml': `${head('Network', 'net-w2', 'warm')}  mtu: 1400\n` });
    counters.reset();
    const out = await applyChangedPath({ ...run, path: ws.repo, since, prune: false });
    expect(out).toMatchObject({ changed: 1, report: { created: 1, errors: [] } });
    // Before its write the fast pass listed the changed kind and nothing in Keystone (no projects, roles or grants).
    expect(counters.sum((e) => e.service === 'identity' && e.method !== 'AUTH')).toBe(0);
    expect(counters.byCollection()).toMatchObject({ 'network POST /networks': 1 });

    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'warm')!;
    expect((await ws.cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project.id })).map((n) => n.name).sort()).toEqual(['net-w1', 'net-w2']);
  });
});
