import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Workspace } from '../support/apply.ts';

let ws: Workspace;
let server: Server;
let diskUrl: string;

/** Until the OCI pipeline lands, the template's images come from a qcow2 served on loopback. */
function pointImagesAt(url: string, dir: string): void {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) pointImagesAt(url, path);
    else if (entry.endsWith('.yaml')) {
      const text = readFileSync(path, 'utf8');
      if (text.includes('kind: Image')) {
        writeFileSync(path, text.replace(/ {2}source:\n {4}oci:\n( {6}.*\n)+/, `  source:\n    url:\n      url: ${url}\n`).replace(/^ {2}(interval|schedule|keep): .*\n/gm, ''));
      }
    }
  }
}

beforeAll(async () => {
  ws = new Workspace();
  const disk = join(ws.dir, 'disk.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
  const bytes = readFileSync(disk);
  server = createServer((_req, res) => res.end(bytes));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  diskUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/cirros.qcow2`;
  cpSync('repo-template', ws.repo, { recursive: true });
  pointImagesAt(diskUrl, ws.repo);
});
afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('the repo template, applied to the test-bed cloud', () => {
  it('creates every resource in its tenant project, VMs ACTIVE; a second apply writes nothing and reads little', async () => {
    const first = await ws.apply();
    expect(first.diagnostics).toEqual([]);
    expect(first.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(first.report!.created).toBeGreaterThanOrEqual(25);

    const compute = await ws.cloud.adminCompute();
    for (const ns of ['team-a', 'team-b']) {
      const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
      const servers = await compute.list<{ name: string; status: string; tenant_id: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id: project!.id });
      expect(servers.length).toBeGreaterThan(0);
      for (const s of servers) expect([s.name, s.status]).toEqual([s.name, 'ACTIVE']);
      const nets = await ws.cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project!.id });
      expect(nets.length).toBeGreaterThan(0);
    }

    const second = await ws.apply();
    expect(second.report!.errors).toEqual([]);
    expect(second.report!.apiCalls.write, JSON.stringify(second.report)).toBe(0);
    expect(second.report!.created + second.report!.updated).toBe(0);
    // At most 3 reads per kind per project, plus the project bookkeeping.
    expect(second.report!.apiCalls.read).toBeLessThanOrEqual(3 * 12 * 2 + 8);
  });
});
