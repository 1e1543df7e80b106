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
import { network as networkKind } from '../../agent/kinds/network/adapter.ts';
import { withDescriptionMarker } from '../../agent/ownership/marker.ts';
import { replaceHash } from '../../agent/plan/diff.ts';
import type { HttpRequest } from '../../agent/openstack/transport.ts';

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

  it('reads only the networks the changed manifests may own, adopts a marked one made outside the run, and follows a renamed one by its recorded id', async () => {
    const client = OpenStackCloud.fromCloudsYaml(testCloudName);
    const lists: string[] = [];
    const send = client.session.transport.send.bind(client.session.transport);
    client.session.transport.send = (req: HttpRequest) => {
      if (req.method === 'GET' && new URL(req.url).pathname.endsWith('/networks')) lists.push(new URL(req.url).search);
      return send(req);
    };
    const run = { cloud: testCloudName, config: ws.config, allowMassDelete: false, log: (l: string) => ws.log.push(l), openstack: client };
    const named = (name: string, extra = ''): Record<string, string> => ({ [`named/${name}.yaml`]: `${head('Network', name, 'named')}  mtu: 1400\n${extra}` });
    ws.write({ ...named('fill-1'), ...named('fill-2'), ...named('fill-3'), ...named('net-r') });
    expect((await applyPath({ ...run, path: ws.repo, prune: false })).report).toMatchObject({ created: 4, errors: [] });
    const since = join(snapshots, 'named-1');
    cpSync(ws.repo, since, { recursive: true });
    const network = ws.cloud.client('network');
    const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'named')!;
    const inNeutron = (): Promise<{ id: string; name: string }[]> => network.list<{ id: string; name: string }>('/networks', 'networks', { project_id: project.id });
    const renamed = (await inNeutron()).find((n) => n.name === 'net-r')!;

    // What a create of named/net-m leaves when its answer is lost, or what another tool with this owner made: the marker in the description.
    const marker = { owner: ws.owner, ref: 'Network/net-m', specHash: replaceHash(networkKind, { name: 'net-m', mtu: 1400 }) };
    const made = (await network.post<{ network: { id: string } }>('/networks', { network: { name: 'net-m', mtu: 1400, project_id: project.id, description: withDescriptionMarker(undefined, marker) } })).network;
    ws.write({ ...named('net-m'), ...named('net-r', '  name: net-r-renamed\n') });
    lists.length = 0;
    const out = await applyChangedPath({ ...run, path: ws.repo, since, prune: false });
    expect(out).toMatchObject({ changed: 2, report: { created: 0, updated: 1, unchanged: 1, errors: [] } });
    // Adopted, not made again; renamed in place, found by the id the full pass recorded (no network is called net-r any more).
    const after = await inNeutron();
    expect(after.filter((n) => n.name === 'net-m').map((n) => n.id)).toEqual([made.id]);
    expect(after.filter((n) => n.name === 'net-r-renamed').map((n) => n.id)).toEqual([renamed.id]);
    expect(after).toHaveLength(5);
    // Every network list of the fast pass was filtered by the manifests' names or the recorded id, never the project's whole collection.
    expect(lists.length).toBeGreaterThan(0);
    for (const q of lists) expect(q).toMatch(/[?&](name|id)=/);
    expect(lists.some((q) => q.includes(`id=${renamed.id}`))).toBe(true);
  });
});
