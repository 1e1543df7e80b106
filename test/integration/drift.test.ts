import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestHead as head, Workspace } from '../support/apply.ts';

let ws: Workspace;
let projectId: string;
const network = () => ws.cloud.client('network');

interface Rule {
  id: string;
  port_range_min: number | null;
  protocol: string | null;
  direction: string;
}

async function group(): Promise<{ id: string; security_group_rules: Rule[] }> {
  const [g] = await network().list<{ id: string; name: string; security_group_rules: Rule[] }>('/security-groups', 'security_groups', { project_id: projectId, name: 'web' });
  return g!;
}

beforeAll(async () => {
  ws = new Workspace();
  ws.write({
    'drift.yaml': [
      `${head('Network', 'net', 'drift')}  mtu: 1450\n`,
      `${head('Subnet', 'sub', 'drift')}  networkRef: {name: net}\n  cidr: 10.88.0.0/24\n`,
      `${head('SecurityGroup', 'web', 'drift')}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: 80, portRangeMax: 80, remoteIPPrefix: 0.0.0.0/0}\n    - {direction: ingress, protocol: tcp, portRangeMin: 443, portRangeMax: 443, remoteIPPrefix: 0.0.0.0/0}\n`,
      `${head('Port', 'vip', 'drift')}  networkRef: {name: net}\n  macAddress: "fa:16:3e:00:00:42"\n`,
    ].join('---\n'),
  });
  expect((await ws.apply()).report!.errors, ws.log.join('\n')).toEqual([]);
  const [p] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-drift` });
  projectId = p!.id;
});
afterAll(async () => {
  await ws.dispose();
});

describe('drift made outside Git', () => {
  it('a deleted security-group rule comes back and an added one goes away', async () => {
    const before = await group();
    const https = before.security_group_rules.find((r) => r.port_range_min === 443)!;
    await network().remove(`/security-group-rules/${https.id}`);
    await network().post('/security-group-rules', { security_group_rule: { security_group_id: before.id, project_id: projectId, direction: 'ingress', protocol: 'tcp', port_range_min: 8080, port_range_max: 8080 } });

    const r = await ws.apply();
    expect(r.report).toMatchObject({ updated: 1, errors: [] });
    expect(r.report!.drift.map((d) => [d.address, d.path, d.immutable])).toEqual([['drift/SecurityGroup/web', 'rules', false]]);
    const ports = (await group()).security_group_rules.filter((x) => x.protocol === 'tcp').map((x) => x.port_range_min).sort();
    expect(ports).toEqual([443, 80]);
    expect((await ws.apply()).report!.apiCalls.write).toBe(0);
  });

  it('a changed immutable field (a port\'s MAC address) is reported and left alone', async () => {
    const [port] = await network().list<{ id: string; mac_address: string }>('/ports', 'ports', { project_id: projectId, name: 'vip' });
    await network().put(`/ports/${port!.id}`, { port: { mac_address: 'fa:16:3e:00:00:99' } });
    const r = await ws.apply();
    expect(r.report).toMatchObject({ updated: 0, replaced: 0, errors: [] });
    expect(r.report!.apiCalls.write).toBe(0);
    expect(r.report!.drift).toEqual([{ address: 'drift/Port/vip', path: 'mac_address', expected: 'fa:16:3e:00:00:42', actual: 'fa:16:3e:00:00:99', immutable: true }]);
    expect(r.report!.warnings.join('\n')).toMatch(/drift\/Port\/vip: mac_address .* cannot change in place; left alone/);
    const [after] = await network().list<{ id: string; mac_address: string }>('/ports', 'ports', { project_id: projectId, name: 'vip' });
    expect([after!.id, after!.mac_address]).toEqual([port!.id, 'fa:16:3e:00:00:99']);
  });

  it('changing the immutable field in Git replaces the object', async () => {
    ws.write({ 'drift.yaml': ws.read('drift.yaml').replace('fa:16:3e:00:00:42', 'fa:16:3e:00:00:43') });
    const r = await ws.apply();
    expect(r.report).toMatchObject({ replaced: 1, errors: [] });
    const ports = await network().list<{ mac_address: string }>('/ports', 'ports', { project_id: projectId, name: 'vip' });
    expect(ports.map((p) => p.mac_address)).toEqual(['fa:16:3e:00:00:43']);
  });
});
