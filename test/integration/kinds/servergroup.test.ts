import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPath } from '../../../agent/standalone/apply-path.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';

/*
 * The bed's Nova has ONE compute host (fake driver, host `aio`): a strict
 * anti-affinity group cannot hold two servers there (the second fails
 * scheduling, as Nova intends). soft-anti-affinity is the honest choice: Nova
 * spreads when it can and still places both, and both are members.
 */

let ws: Workspace;
let server: Server;
const ns = 'sg';

const openstack = (...args: string[]): Record<string, unknown> =>
  JSON.parse(execFileSync('openstack', ['--os-cloud', testCloudName, '--os-compute-api-version', '2.64', ...args, '-f', 'json'], { encoding: 'utf8' })) as Record<string, unknown>;

const files = (policy: string, port: number): Record<string, string> => ({
  'sg.yaml': [
    `${head('Network', 'net', ns)}  mtu: 1400\n`,
    `${head('Subnet', 'sub', ns)}  networkRef: {name: net}\n  cidr: 10.93.0.0/24\n`,
    `${head('Flavor', 'tiny', ns)}  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('Image', 'raw', ns)}  diskFormat: raw\n  source:\n    url: {url: "http://127.0.0.1:${port}/disk.raw"}\n`,
    `${head('ServerGroup', 'spread', ns)}  policy: ${policy}\n`,
    ...['a', 'b'].map((n) => `${head('VirtualMachine', `web-${n}`, ns)}  flavorRef: {name: tiny}\n  imageRef: {name: raw}\n  networks: [{networkRef: {name: net}}]\n  serverGroupRef: {name: spread}\n`),
  ].join('---\n'),
});

let port = 0;
beforeAll(async () => {
  ws = new Workspace();
  server = createServer((_req, res) => res.end(Buffer.alloc(64 * 1024)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  port = typeof addr === 'object' && addr ? addr.port : 0;
});
afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('ServerGroup', () => {
  it('two VMs in a soft-anti-affinity group land in the group, as Nova shows it', async () => {
    ws.write(files('soft-anti-affinity', port));
    const applied = await ws.apply();
    expect(applied.diagnostics).toEqual([]);
    expect(applied.report!.errors, ws.log.join('\n')).toEqual([]);
    // What Nova holds in the namespace's project, asked with the admin's own CLI and API.
    const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
    const compute = await ws.cloud.adminCompute();
    const groups = (await compute.list<{ id: string; project_id: string }>('/os-server-groups', 'server_groups', { all_projects: 'True' })).filter((g) => g.project_id === project!.id);
    expect(groups).toHaveLength(1);
    const shown = openstack('server', 'group', 'show', groups[0]!.id);
    expect(shown.policy).toBe('soft-anti-affinity');
    // The marker rides on Nova's name, after the manifest's.
    expect(String(shown.name)).toMatch(new RegExp(`^spread \\[kupenstack ${ws.owner} ServerGroup/spread [0-9a-f]{8}\\]$`));
    const servers = await compute.list<{ id: string; name: string; status: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id: project!.id });
    expect(servers.map((v) => v.name).sort()).toEqual(['web-a', 'web-b']);
    expect([...(shown.members as string[])].sort()).toEqual(servers.map((v) => v.id).sort());

    // Converged: a second apply writes nothing.
    const again = await ws.apply();
    expect(again.report).toMatchObject({ created: 0, updated: 0, replaced: 0, errors: [] });
  });

  it('plans a policy change as a destructive replace of the group, cascading to its member VMs', async () => {
    ws.write(files('anti-affinity', port));
    const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined });
    expect(outcome.diagnostics).toEqual([]);
    const plan = outcome.report!;
    expect(plan.apiCalls.write).toBe(0);
    const group = plan.changes.find((c) => c.address === `${ns}/ServerGroup/spread`)!;
    expect(group).toMatchObject({ action: 'replace', destructive: true });
    expect(group.fields).toContainEqual({ path: 'policy', before: 'soft-anti-affinity', after: 'anti-affinity', forcesReplacement: true });
    for (const n of ['a', 'b']) {
      const vm = plan.changes.find((c) => c.address === `${ns}/VirtualMachine/web-${n}`)!;
      expect(vm).toMatchObject({ action: 'replace', destructive: true });
      expect(vm.fields.find((f) => f.path === 'server_group')).toMatchObject({ after: '(known after apply: ServerGroup/spread)', forcesReplacement: true });
    }
  });

});
