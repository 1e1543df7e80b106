import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyPairName } from '../../agent/kinds/keypair/adapter.ts';
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
/** Manifests of the template by namespace: kind → metadata names (what OpenStack must hold afterwards). */
function declared(dir: string, out = new Map<string, Map<string, { name: string; spec: Record<string, unknown> }[]>>()): typeof out {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) declared(path, out);
    else if (entry.endsWith('.yaml')) {
      for (const doc of loadAll(readFileSync(path, 'utf8')) as { kind?: string; metadata?: { name: string; namespace?: string }; spec?: Record<string, unknown> }[]) {
        if (!doc?.kind || !doc.metadata?.namespace) continue;
        const byKind = out.get(doc.metadata.namespace) ?? new Map<string, { name: string; spec: Record<string, unknown> }[]>();
        out.set(doc.metadata.namespace, byKind);
        byKind.set(doc.kind, [...(byKind.get(doc.kind) ?? []), { name: doc.metadata.name, spec: doc.spec ?? {} }]);
      }
    }
  }
  return out;
}

afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('the repo template, applied to the test-bed cloud', () => {
  // Two applies that boot VMs, then a count of every kind: past the default 180 s on the loaded test bed.
  it('creates every resource in its tenant project, VMs ACTIVE; a second apply writes nothing and reads little', { timeout: 420_000 }, async () => {
    const first = await ws.apply();
    expect(first.diagnostics).toEqual([]);
    expect(first.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(first.report!.created).toBeGreaterThanOrEqual(25);

    // Every kind of every namespace, counted in OpenStack against the template's manifests.
    const want = declared(join(ws.repo, 'tenants'));
    expect([...want.keys()].sort()).toEqual(['team-a', 'team-b']);
    const compute = await ws.cloud.adminCompute();
    const network = ws.cloud.client('network');
    const marked = (d: unknown): boolean => typeof d === 'string' && d.includes(`[kupenstack ${ws.owner} `);
    for (const [ns, kinds] of want) {
      const projectName = `${ws.owner}-${ns}`;
      const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: projectName });
      expect(project, projectName).toBeDefined();
      const pid = project!.id;
      const servers = await compute.list<{ name: string; status: string }>('/servers/detail', 'servers', { all_tenants: 1, project_id: pid });
      expect(servers.map((s) => [s.name, s.status])).toEqual(servers.map((s) => [s.name, 'ACTIVE']));
      const inNeutron = async (path: string, key: string): Promise<number> => (await network.list<{ description?: string }>(path, key, { project_id: pid })).filter((o) => marked(o.description)).length;
      // Ours carry the owner marker in their metadata; a VM's boot volume is Nova's, not a Volume manifest's.
      const volumes = (await ws.cloud.client('volumev3', { projectId: pid }).list<{ metadata?: Record<string, string> }>('/volumes/detail', 'volumes', {})).filter((v) => JSON.stringify(v.metadata ?? {}).includes(ws.owner) && JSON.stringify(v.metadata).includes('Volume/'));
      const images = await ws.cloud.client('image', { projectId: pid }).list<{ owner: string }>('/images', 'images', { owner: pid });
      const flavors = await compute.list<{ name: string }>('/flavors', 'flavors', { is_public: 'None' });
      let keyPairs = 0;
      for (const k of kinds.get('KeyPair') ?? []) if (await compute.find(`/os-keypairs/${keyPairName(projectName, k.name)}`)) keyPairs++;
      let quotas = 0;
      for (const q of kinds.get('ProjectQuota') ?? []) {
        const c = (await compute.get<{ quota_set: { instances: number } }>(`/os-quota-sets/${pid}`)).quota_set;
        const n = (await network.get<{ quota: { network: number } }>(`/quotas/${pid}`)).quota;
        const spec = q.spec as { compute?: { instances?: number }; network?: { networks?: number } };
        if (c.instances === spec.compute?.instances && n.network === spec.network?.networks) quotas++;
      }
      const seen: Record<string, number> = {
        VirtualMachine: servers.length,
        Network: await inNeutron('/networks', 'networks'),
        Subnet: await inNeutron('/subnets', 'subnets'),
        Router: await inNeutron('/routers', 'routers'),
        Port: await inNeutron('/ports', 'ports'),
        FloatingIP: await inNeutron('/floatingips', 'floatingips'),
        SecurityGroup: await inNeutron('/security-groups', 'security_groups'),
        Volume: volumes.length,
        Image: images.length,
        Flavor: flavors.filter((f) => f.name.startsWith(`${projectName}-`)).length,
        KeyPair: keyPairs,
        ProjectQuota: quotas,
      };
      const expected = Object.fromEntries(Object.keys(seen).map((k) => [k, kinds.get(k)?.length ?? 0]));
      expect(seen, ns).toEqual(expected);
      expect(Object.values(expected).reduce((a, b) => a + b, 0), ns).toBeGreaterThan(0);
      // Every declared kind is counted above.
      expect([...kinds.keys()].filter((k) => !(k in seen))).toEqual([]);
    }

    const second = await ws.apply();
    expect(second.report!.errors).toEqual([]);
    expect(second.report!.apiCalls.write, JSON.stringify(second.report)).toBe(0);
    expect(second.report!.created + second.report!.updated).toBe(0);
    // At most 3 reads per kind per project, plus the project bookkeeping.
    expect(second.report!.apiCalls.read).toBeLessThanOrEqual(3 * 12 * 2 + 8);
  });
});
