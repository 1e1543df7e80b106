import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { testCloudName } from '../../support/context.ts';
import { failure, leftovers, runPage, type PageRun } from '../../support/docs-run.ts';

/*
 * Issue 46 item 5, the acceptance test of docs/how-to/take-over.md: a project made through the
 * OpenStack API without the default prefix (`howto-takeover`, not `ks-howto-takeover`), with a network,
 * a subnet, a router and a security group; the guide run as written (test/support/docs-run.ts) must end
 * with a second apply of 0 writes, every id as it was, and no new project. Everything made is deleted.
 */
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
const project = 'howto-takeover';
const made: { project?: string; network?: string; subnet?: string; router?: string; group?: string } = {};
let run: PageRun;
let projectsBefore: string[] = [];

/** The cloud's projects whose name holds this page's project: what the guide could make (`ks-howto-takeover` by the default prefix). Other test files make and delete projects of their own meanwhile. */
async function projectNames(): Promise<string[]> {
  return (await cloud.identity.list<{ name: string }>('/projects', 'projects')).map((p) => p.name).filter((n) => n.includes(project)).sort();
}

async function cleanUp(): Promise<void> {
  const network = cloud.client('network');
  if (made.router && made.subnet) await network.put(`/routers/${made.router}/remove_router_interface`, { subnet_id: made.subnet }).catch(() => undefined);
  if (made.router) await network.remove(`/routers/${made.router}`).catch(() => undefined);
  if (made.network) await network.remove(`/networks/${made.network}`).catch(() => undefined);
  if (made.project) {
    for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: made.project })) await network.remove(`/security-groups/${g.id}`);
    await cloud.identity.call('PATCH', `/projects/${made.project}`, { json: { project: { enabled: false } } });
    await cloud.identity.remove(`/projects/${made.project}`);
  }
}

beforeAll(async () => {
  // A project left by an interrupted run of this test is the fixture's own: start clean.
  expect(await leftovers(cloud, [project]).then((l) => l.filter((x) => !x.startsWith('project ')))).toEqual([]);
  for (const p of await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: project })) {
    made.project = p.id;
    await cleanUp();
  }
  const tag = randomBytes(3).toString('hex');
  const identity = cloud.identity;
  made.project = (await identity.post<{ project: { id: string } }>('/projects', { project: { name: project, domain_id: 'default', description: `made by hand (${tag})` } }, [201])).project.id;
  const network = cloud.client('network');
  made.network = (await network.post<{ network: { id: string } }>('/networks', { network: { name: 'app', project_id: made.project } })).network.id;
  made.subnet = (await network.post<{ subnet: { id: string } }>('/subnets', { subnet: { name: 'app-subnet', network_id: made.network, ip_version: 4, cidr: '10.46.5.0/24', project_id: made.project } })).subnet.id;
  made.router = (await network.post<{ router: { id: string } }>('/routers', { router: { name: 'edge', project_id: made.project } })).router.id;
  await network.put(`/routers/${made.router}/add_router_interface`, { subnet_id: made.subnet });
  made.group = (await network.post<{ security_group: { id: string } }>('/security-groups', { security_group: { name: 'web', description: 'web tier', project_id: made.project } })).security_group.id;
  await network.post('/security-group-rules', { security_group_rule: { security_group_id: made.group, direction: 'ingress', protocol: 'tcp', port_range_min: 443, port_range_max: 443, ethertype: 'IPv4' } });
  projectsBefore = await projectNames();
  run = await runPage('how-to/take-over.md');
}, 1_800_000);

afterAll(async () => {
  await cleanUp();
  expect(await leftovers(cloud, [project])).toEqual([]);
}, 600_000);

describe('docs/how-to/take-over.md, run as written against a project without the prefix', () => {
  it('runs every block to the end', () => {
    expect(run.code, failure(run)).toBe(0);
    expect(run.steps.at(-1)!.line).toBe('end');
  });

  it("export's last line is the next command, and plan shows only adopt", () => {
    const exportStep = run.steps[0]!.output.trimEnd().split('\n');
    expect(exportStep.at(-1)).toMatch(/^wrote \d+ files to repo; next: kupenstack plan repo --cloud mycloud \(one adopt per object\), then kupenstack apply repo --cloud mycloud$/);
    const plan = run.steps[2]!.output;
    // The network, subnet, router and security group (its rule is part of it), each adopted; nothing else.
    expect(plan).toMatch(/Plan: [4-9] to adopt, 0 to create, 0 to update, 0 to replace, 0 to delete \(0 destructive\)\./);
  });

  it('the first apply writes only markers, the second none', () => {
    const [first, second] = [run.steps[3]!.output, run.steps[4]!.output];
    expect(first).toMatch(/0 created, 0 updated, 0 replaced, 0 deleted, 0 healed, \d+ unchanged; 0 errors; API calls: \d+ read, [1-9]\d* write/);
    expect(second).toMatch(/0 created, 0 updated, 0 replaced, 0 deleted, 0 healed, \d+ unchanged; 0 errors; API calls: \d+ read, 0 write\n?$/);
  });

  it('every id is unchanged, the project is taken over, and no project was made', async () => {
    const network = cloud.client('network');
    expect((await network.get<{ network: { id: string; project_id: string } }>(`/networks/${made.network!}`)).network.project_id).toBe(made.project);
    expect((await network.get<{ subnet: { id: string } }>(`/subnets/${made.subnet!}`)).subnet.id).toBe(made.subnet);
    expect((await network.get<{ router: { id: string } }>(`/routers/${made.router!}`)).router.id).toBe(made.router);
    expect((await network.get<{ security_group: { id: string } }>(`/security-groups/${made.group!}`)).security_group.id).toBe(made.group);
    const names = (await network.list<{ name: string }>('/networks', 'networks', { project_id: made.project! })).map((n) => n.name);
    expect(names).toEqual(['app']);
    const tags = (await cloud.identity.get<{ project: { tags: string[] } }>(`/projects/${made.project!}`)).project.tags;
    expect(tags).toContain(`kupenstack-namespace:${project}`);
    expect(projectsBefore).toEqual([project]);
    expect(await projectNames()).toEqual(projectsBefore);
  });
});

