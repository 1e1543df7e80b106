import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cpuByComponent, describeCpu, type CpuSnapshot } from '../bench/machine-cpu.ts';
import { methods, userLine } from '../bench/orc-identity.ts';
import { orcManifests } from '../bench/orc-manifests.ts';

// The ORC bench's pure parts: whose request an access line is, and the objects ORC is given.
describe('the ORC bench', () => {
  it('reads the user and the method of a Neutron and a Nova access line', () => {
    const neutron =
      '2026-12-06 09:02:21.197 24867 INFO neutron.wsgi [req-e5d171ee-b0d4-4df6-91b6-050f2b651306 req-d946020a-8585-4a65-b449-2043b594a4f6 e04a16f7298042f9a6cde5d2efcf151d 073e47132965493b8f0776825572abe9 - - default default] 127.0.0.1 "POST /v2.0/networks HTTP/1.1" status: 201  len: 14 time: 0.0121109';
    const nova =
      '2026-12-06 02:53:33.447 7279 INFO nova.osapi_compute.wsgi.server [None req-8335b8b9-4c82-41e1-8add-51c692dcbe9a 64975b4c842b4e84a2e81db0461cba75 e389cc35f997408b94831e3abe1eb937 - - default default] 127.0.0.1 "GET /v2.1/os-keypairs HTTP/1.1" status: 200 len: 4';
    expect(userLine(neutron)).toEqual({ at: new Date(2026, 11, 6, 9, 2, 21, 197).getTime(), id: 'req-d946020a-8585-4a65-b449-2043b594a4f6', user: 'e04a16f7298042f9a6cde5d2efcf151d', method: 'POST' });
    expect(userLine(nova)).toMatchObject({ id: 'req-8335b8b9-4c82-41e1-8add-51c692dcbe9a', user: '64975b4c842b4e84a2e81db0461cba75', method: 'GET' });
    expect(userLine('2026-12-06 09:02:14.420 24843 INFO nova.osapi_compute.wsgi.server [-] 127.0.0.1 "GET / HTTP/1.1" status: 200')).toBeUndefined();
  });

  it('sums requests by method across services, most first', () => {
    expect(methods(new Map([['neutron-server GET', 3], ['nova-api GET', 2], ['neutron-server POST', 4]]))).toBe('GET 5, POST 4');
  });

  it('gives ORC the OpenTofu bench objects: 300 at full size, ports on their subnet, OpenStack names per namespace', () => {
    const docs = orcManifests('ns1', 1, 'ssh-ed25519 AAAA bench').split('---\n');
    const kinds = docs.map((d) => /kind: (\w+)/.exec(d)![1]!);
    const count = (k: string): number => kinds.filter((x) => x === k).length;
    expect(docs).toHaveLength(300);
    expect([count('Network'), count('Subnet'), count('SecurityGroup'), count('Port'), count('KeyPair'), count('Flavor')]).toEqual([60, 60, 60, 60, 30, 30]);
    expect(docs.find((d) => d.includes('name: port-7,'))).toContain('addresses: [{subnetRef: sub-7}]');
    expect(docs.find((d) => d.includes('name: flavor-3,'))).toContain('name: ns1-flavor-3');
    // ORC adopts by name across every project an admin sees: each OpenStack name is the namespace's own.
    expect(docs.filter((d) => /\n {4}name: ns1-/.test(d))).toHaveLength(300);
    expect(orcManifests('ns1', 0.2, 'k', { resyncSeconds: 60 })).toContain('resyncPeriod: 60s');
  });
});

describe("the ORC bench's machine CPU profile", () => {
  const tick = 1 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  const snap = (busy: number, procs: [number, string, number][]): CpuSnapshot => ({ busy, procs: new Map(procs.map(([pid, comm, ticks]) => [pid, { comm, ticks }])) });

  it('sums each component between two snapshots, names the controllers, counts a process born inside and what came and went', () => {
    const a = snap(1000, [[10, 'neutron-server:', 100], [11, 'neutron-server:', 50], [20, 'kube-apiserver', 10], [30, 'MainThread', 5], [40, 'bash', 7]]);
    // 40 ended (its CPU is in busy, not in any process); 50 was born inside the window; 11 was replaced by another process under its PID.
    const b = snap(1400, [[10, 'neutron-server:', 160], [11, 'uwsgi', 20], [20, 'kube-apiserver', 70], [30, 'MainThread', 85], [50, 'mariadbd', 30]]);
    const parts = new Map(cpuByComponent(a, b, new Map([[30, 'ours controller']])));
    expect(parts.get('Neutron API')).toBeCloseTo(60 * tick);
    expect(parts.get('Keystone')).toBeCloseTo(20 * tick);
    expect(parts.get('kube-apiserver')).toBeCloseTo(60 * tick);
    expect(parts.get('ours controller')).toBeCloseTo(80 * tick);
    expect(parts.get('MariaDB')).toBeCloseTo(30 * tick);
    // 400 busy ticks, 250 seen in processes still there: 150 in processes gone by the end.
    expect(parts.get('processes gone by the end (kubectl)')).toBeCloseTo(150 * tick);
    expect(describeCpu([['Neutron API', 24.06], ['etcd', 0.2]], 40, 2)).toBe('Neutron API 24.1; machine 24.3 of 80.0 CPU-s (2 cores × 40.0 s)');
  });
});
