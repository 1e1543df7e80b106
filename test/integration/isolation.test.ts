import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { peers } from '../support/peers.ts';
import { ownedProjects } from '../../agent/act/projects.ts';

let ws: Workspace;
const password = randomBytes(12).toString('hex');
const cleanup: (() => Promise<unknown>)[] = [];
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
  await ws.dispose();
});

/** The openstack CLI as a given user, scoped to a given project: what that user really sees. */
function networksSeenBy(user: string, project: string): string[] {
  const out = execFileSync('openstack', ['network', 'list', '-f', 'value', '-c', 'Name'], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      OS_AUTH_URL: peers.keystone,
      OS_IDENTITY_API_VERSION: '3',
      OS_USERNAME: user,
      OS_PASSWORD: password,
      OS_PROJECT_NAME: project,
      OS_USER_DOMAIN_NAME: 'Default',
      OS_PROJECT_DOMAIN_NAME: 'Default',
      OS_REGION_NAME: peers.region,
    },
  });
  return out.split('\n').filter(Boolean).sort();
}

describe('namespace == project', () => {
  it('resources live in their project: a member of another project does not see them, a member of that project does', async () => {
    ws.write({ 'ns.yaml': `${head('Network', 'private-net', 'iso')}  mtu: 1400\n` });
    expect((await ws.apply()).report).toMatchObject({ created: 1, errors: [] });

    const identity = ws.cloud.identity;
    const [member] = await identity.list<{ id: string }>('/roles', 'roles', { name: 'member' });
    const [ours] = await identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-iso` });
    const other = await identity.post<{ project: { id: string; name: string } }>('/projects', { project: { name: `${ws.owner}-other`, domain_id: 'default' } });
    cleanup.push(() => identity.remove(`/projects/${other.project.id}`));
    const user = await identity.post<{ user: { id: string; name: string } }>('/users', { user: { name: `${ws.owner}-user`, password, domain_id: 'default' } });
    cleanup.push(() => identity.remove(`/users/${user.user.id}`));
    await identity.put(`/projects/${other.project.id}/users/${user.user.id}/roles/${member!.id}`, undefined, [204]);

    const seenFromOther = networksSeenBy(user.user.name, other.project.name);
    expect(seenFromOther).not.toContain('private-net');
    expect(seenFromOther).toContain('public'); // the shared external network stays visible: the listing works

    await identity.put(`/projects/${ours!.id}/users/${user.user.id}/roles/${member!.id}`, undefined, [204]);
    expect(networksSeenBy(user.user.name, `${ws.owner}-iso`)).toContain('private-net');
  });
});

/**
 * Bulk creates go with the agent's admin scope, which Neutron does not check
 * for network ownership: the engine must refuse itself what Neutron refuses a
 * project. Namespaces that have no project yet read their imports with the
 * agent's own scope, so an import by id of another project's network resolves.
 */
describe("namespace == project: another project's network", () => {
  const ws2 = new Workspace();
  const network = ws2.cloud.client('network');
  let sharedId = '';
  afterAll(async () => {
    await ws2.dispose();
    if (sharedId) await network.remove(`/networks/${sharedId}`);
  });

  const imported = (ns: string, id: string): string => `${head('Network', 'theirs', ns)}  managementPolicy: unmanaged\n  import: {id: ${id}}\n`;
  const onTheirs = (ns: string, kind: 'Subnet' | 'Port', name: string, cidr?: string): string => `${head(kind, name, ns)}  networkRef: {name: theirs}\n${cidr ? `  cidr: ${cidr}\n` : ''}`;

  it("refuses subnets and ports on another project's private network imported by id, and creates nothing", async () => {
    ws2.write({ 'b.yaml': `${head('Network', 'private-b', 'iso-b')}  mtu: 1400\n` });
    const b = await ws2.apply();
    expect(b.report).toMatchObject({ created: 1, errors: [] });
    const [privateB] = await network.list<{ id: string; project_id: string }>('/networks', 'networks', { name: 'private-b', project_id: (await ownedProjects(ws2.cloud, ws2.owner)).find((p) => p.namespace === 'iso-b')!.id });

    // Two of each kind: they go out as one bulk each.
    const a = [imported('iso-a', privateB!.id), onTheirs('iso-a', 'Subnet', 's1', '10.231.1.0/24'), onTheirs('iso-a', 'Subnet', 's2', '10.231.2.0/24'), onTheirs('iso-a', 'Port', 'p1'), onTheirs('iso-a', 'Port', 'p2')].join('---\n');
    ws2.write({ 'a.yaml': a });
    // Out of the next test's revision whatever this one finds.
    onTestFinished(() => ws2.remove('a.yaml'));
    const out = await ws2.apply();
    const errors = out.report?.errors ?? [];
    // The import itself is refused (issue 26: another project's private network is not this namespace's to use), and what stands on it with it.
    expect(errors.map((e) => [e.address, e.code]).sort()).toEqual([
      ['iso-a/Network/theirs', 'import.foreign'],
      ['iso-a/Port/p1', 'ref.unresolved'],
      ['iso-a/Port/p2', 'ref.unresolved'],
      ['iso-a/Subnet/s1', 'ref.unresolved'],
      ['iso-a/Subnet/s2', 'ref.unresolved'],
    ]);
    const refused = errors.find((e) => e.address === 'iso-a/Network/theirs')!;
    expect(refused.message).toContain(`the Network ${privateB!.id} to import belongs to another project (${privateB!.project_id})`);
    expect(out.report?.created).toBe(0);

    // Nothing was made: not on B's network, not in A's project.
    expect(await network.list('/subnets', 'subnets', { network_id: privateB!.id })).toEqual([]);
    expect(await network.list('/ports', 'ports', { network_id: privateB!.id })).toEqual([]);
    const projectA = (await ownedProjects(ws2.cloud, ws2.owner)).find((p) => p.namespace === 'iso-a')!;
    expect(await network.list('/subnets', 'subnets', { project_id: projectA.id })).toEqual([]);
    expect(await network.list('/ports', 'ports', { project_id: projectA.id })).toEqual([]);
  });

  it("creates a subnet and ports on another project's shared network imported by id", async () => {
    const projectB = (await ownedProjects(ws2.cloud, ws2.owner)).find((p) => p.namespace === 'iso-b')!;
    const shared = await network.post<{ network: { id: string } }>('/networks', { network: { name: `${ws2.owner}-shared`, project_id: projectB.id, shared: true } });
    sharedId = shared.network.id;

    ws2.write({ 'c.yaml': [imported('iso-c', sharedId), onTheirs('iso-c', 'Subnet', 's1', '10.232.1.0/24'), onTheirs('iso-c', 'Port', 'p1'), onTheirs('iso-c', 'Port', 'p2')].join('---\n') });
    const out = await ws2.apply();
    expect(out.report).toMatchObject({ created: 3, errors: [] });
    const projectC = (await ownedProjects(ws2.cloud, ws2.owner)).find((p) => p.namespace === 'iso-c')!;
    const ports = await network.list<{ name: string; project_id: string }>('/ports', 'ports', { network_id: sharedId });
    expect(ports.map((p) => [p.name, p.project_id]).sort()).toEqual([
      ['p1', projectC.id],
      ['p2', projectC.id],
    ]);
    const subnets = await network.list<{ name: string; project_id: string }>('/subnets', 'subnets', { network_id: sharedId });
    expect(subnets.map((s) => [s.name, s.project_id])).toEqual([['s1', projectC.id]]);
  });
});
