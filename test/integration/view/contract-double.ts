import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  csrfHeader,
  sessionCookie,
  type CloudView,
  type HeldPlan,
  type ImagesView,
  type NamespaceView,
  type ObjectDetail,
  type ObjectSummary,
  type Overview,
  type SyncTree,
  type WhoAmI,
} from '../../../agent/view/api.ts';
import { serveStatic } from './browser.ts';

/*
 * A double of the view server that answers agent/view/api.ts's contract from data the test holds
 * and changes: the browser half's own test (every page, routing, 403, live re-reads, 1 000 rows)
 * without the cluster. The real server's end-to-end browser test is real-cloud.test.ts.
 */

const id = (n: number): string => `${n.toString(16).padStart(8, '0')}-1c2d-4e5f-8a9b-${(n * 7919).toString(16).padStart(12, '0')}`;
const at = (minAgo: number): string => new Date(Date.now() - minAgo * 60_000).toISOString();

function obj(kind: string, name: string, n: number, extra: Partial<ObjectSummary> = {}): ObjectSummary {
  return { kind, namespace: 'team-a', name, openstackId: id(n), health: 'Ready', refs: [], lastSyncTime: at(1), ...extra };
}

export class ContractDouble {
  readonly token = 'team-a-token';
  readonly teamA: ObjectSummary[] = [
    obj('Network', 'net-a', 1),
    obj('Subnet', 'subnet-a', 2, { refs: [{ kind: 'Network', name: 'net-a', field: 'networkRef' }] }),
    obj('Port', 'vm-a-port', 3, { refs: [{ kind: 'Network', name: 'net-a', field: 'networkRef' }] }),
    obj('Volume', 'data-a', 4),
    obj('Image', 'ubuntu', 5),
    obj('VirtualMachine', 'vm-a', 6, {
      refs: [
        { kind: 'Image', name: 'ubuntu', field: 'imageRef' },
        { kind: 'Port', name: 'vm-a-port', field: 'ports[0].portRef' },
        { kind: 'Volume', name: 'data-a', field: 'volumes[0].volumeRef' },
      ],
      lastEvent: { type: 'Normal', reason: 'Recreated', message: 'server 0000 was gone from Nova; created it again', count: 1, at: at(2) },
    }),
  ];
  big: ObjectSummary[] = [];
  /** Upgrade steps the test advances. */
  steps: CloudView['upgrade'] = undefined;
  private server?: Server;
  private readonly sessions = new Set<string>();
  private readonly streams = new Set<ServerResponse>();
  base = '';

  private readonly bundle: string;

  constructor(bundle: string) {
    this.bundle = bundle;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => this.answer(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.base;
  }

  async stop(): Promise<void> {
    for (const s of this.streams) s.end();
    this.server?.closeAllConnections();
    await new Promise((resolve) => (this.server ? this.server.close(resolve) : resolve(undefined)));
  }

  /** Tells every open page something changed (one `change` event per stream). */
  changed(kind: string, name: string): void {
    for (const s of this.streams) s.write(`event: change\ndata: ${JSON.stringify({ scope: 'any', type: 'MODIFIED', kind, name })}\n\n`);
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private signedIn(req: IncomingMessage): boolean {
    const m = new RegExp(`${sessionCookie}=([0-9a-f]+)`).exec(req.headers.cookie ?? '');
    return m !== null && this.sessions.has(m[1]!);
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (!url.pathname.startsWith('/api/')) return serveStatic(this.bundle, req, res);
    if (url.pathname === '/api/login' && req.method === 'POST') return this.login(req, res);
    if (!this.signedIn(req)) return this.json(res, 401, { status: 401, code: 'unauthenticated', message: 'sign in first' });
    const body = this.read(url);
    if (body === 'stream') return this.stream(res);
    if (body === undefined) return this.json(res, 404, { status: 404, code: 'not-found', message: `nothing at ${url.pathname}` });
    if (body === 'forbidden') return this.json(res, 403, { status: 403, code: 'forbidden', message: 'namespaces "team-b" is forbidden: User "system:serviceaccount:team-a:viewer" cannot get resource "namespaces" in the namespace "team-b"' });
    this.json(res, 200, body);
  }

  private login(req: IncomingMessage, res: ServerResponse): void {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      if (req.headers[csrfHeader] !== '1') return this.json(res, 403, { status: 403, code: 'csrf', message: 'missing header' });
      if ((JSON.parse(text) as { token: string }).token !== this.token) return this.json(res, 401, { status: 401, code: 'unauthenticated', message: 'token rejected' });
      const sid = randomBytes(16).toString('hex');
      this.sessions.add(sid);
      const who: WhoAmI = { username: 'system:serviceaccount:team-a:viewer', groups: ['system:serviceaccounts'], mode: 'token', server: 'controller' };
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': `${sessionCookie}=${sid}; HttpOnly; SameSite=Strict; Path=/` }).end(JSON.stringify(who));
    });
  }

  private stream(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write(': open\n\n');
    this.streams.add(res);
    res.on('close', () => this.streams.delete(res));
  }

  private read(url: URL): unknown {
    const p = url.pathname;
    if (p === '/api/whoami') return { username: 'system:serviceaccount:team-a:viewer', groups: [], mode: 'token', server: 'controller' } satisfies WhoAmI;
    if (p === '/api/events') return 'stream';
    if (p === '/api/overview') return this.overview();
    if (p === '/api/syncs/team-a') return this.tree();
    if (p === '/api/syncs/team-a/plan') return this.plan();
    if (p === '/api/namespaces/team-a') return this.namespace('team-a', this.teamA);
    if (p === '/api/namespaces/big') return this.namespace('big', this.big);
    if (p.startsWith('/api/namespaces/team-b')) return 'forbidden';
    if (p === '/api/namespaces/team-a/VirtualMachine/vm-a') return this.vm();
    if (p === '/api/images') return this.images();
    if (p === '/api/clouds/lab') return this.cloud();
    return undefined;
  }

  private overview(): Overview {
    return {
      syncs: [this.tree().sync],
      namespaces: [{ name: 'team-a', counts: { Network: 1, Subnet: 1, VirtualMachine: 1 }, ready: this.teamA.length, notReady: 0, stalled: 0 }],
      clouds: [{ name: 'lab', health: 'Reconciling', release: '2025.1', upgrading: '2025.2' }],
      forbidden: [],
    };
  }

  private tree(): SyncTree {
    const applied = { revision: 'main@sha1:4f2a9c0d1e2b3a4c5d6e7f8091a2b3c4d5e6f708', commit: '4f2a9c0d1e2b', message: 'team-a: a second network', author: 'Ada <ada@example.org>', when: at(3) };
    return {
      sync: { name: 'team-a', source: 'http://127.0.0.1:3000/team-a.git (main)', path: 'team-a', suspended: false, health: 'Ready', applied, held: 'main@sha1:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d', diagnostics: [{ file: 'team-a/vm.yaml', line: 12, column: 5, message: 'imageRef ubuntu-old: no such Image', text: 'team-a/vm.yaml:12:5: imageRef ubuntu-old: no such Image' }], wait: { ready: this.teamA.length, reconciling: 0, stalled: 0, failing: [] }, lastSyncTime: at(1), objects: this.teamA.length },
      revision: applied,
      namespaces: [
        { name: 'team-a', objects: this.teamA },
        { name: 'team-b', objects: [], forbidden: true },
      ],
      cluster: [],
      history: [{ revision: applied.revision, startedAt: at(3), duration: '4.2s', result: 'Succeeded', counts: { created: 1, unchanged: 5 } }],
      events: [{ type: 'Normal', reason: 'Applied', message: 'revision main@sha1:4f2a9c0 applied: 1 created', count: 1, at: at(3) }],
    };
  }

  private plan(): HeldPlan {
    return { sync: 'team-a', revision: 'main@sha1:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d', why: 'mass-delete', message: 'the revision deletes 4 of 6 objects (67 % > 50 %): held until confirmed', deletions: this.teamA.slice(0, 4).map((o) => ({ kind: o.kind, namespace: 'team-a', name: o.name })), counts: { delete: 4, keep: 2 }, diagnostics: [], confirm: 'kubectl annotate sync team-a kupenstack.io/confirm-revision=9e8d7c6b5a4f' };
  }

  private namespace(name: string, rows: ObjectSummary[]): NamespaceView {
    const kinds: Record<string, ObjectSummary[]> = {};
    for (const o of rows) (kinds[o.kind] ??= []).push(o);
    return { name, kinds, quotas: [{ name: 'quota', limits: { instances: 10, cores: 20, ram: 51200 }, usage: { instances: 1, cores: 2, ram: 2048 }, health: 'Ready' }], held: [], events: [] };
  }

  private vm(): ObjectDetail {
    const vm = this.teamA.find((o) => o.kind === 'VirtualMachine')!;
    return { ...vm, conditions: [{ type: 'Ready', status: 'True', reason: 'Active', message: 'server ACTIVE', lastTransitionTime: at(2) }], status: { id: vm.openstackId, state: 'ACTIVE' }, spec: { flavor: 'm1.small', imageRef: 'ubuntu' }, sync: 'team-a', referencedBy: [], events: [vm.lastEvent!] };
  }

  private images(): ImagesView {
    return {
      forbidden: [],
      images: [
        {
          namespace: 'team-a', name: 'ubuntu', source: 'oci://127.0.0.1:5000/os/ubuntu:24.04', repository: '127.0.0.1:5000/os/ubuntu', tag: '24.04', health: 'Ready', openstackId: id(7),
          versions: [
            { digest: `sha256:${'b'.repeat(64)}`, tag: '24.04', glanceId: id(7), createdAt: at(1), active: true, inUse: true },
            { digest: `sha256:${'a'.repeat(64)}`, tag: '24.04', glanceId: id(5), createdAt: at(60), active: false, inUse: false },
          ],
          usedBy: [{ kind: 'VirtualMachine', namespace: 'team-a', name: 'vm-a' }], signature: 'verified by key cosign.pub',
        },
      ],
    };
  }

  private cloud(): CloudView {
    const services = ['keystone', 'glance', 'neutron', 'nova'].map((s) => ({ name: s, ready: s !== 'nova', release: s === 'nova' ? '2025.1' : '2025.2', chartVersion: '2025.2.0' }));
    return { name: 'lab', health: 'Reconciling', conditions: [{ type: 'Ready', status: 'False', reason: 'Upgrading', message: 'upgrading 2025.1 → 2025.2' }], release: '2025.1', services, events: [], ...(this.steps ? { upgrade: this.steps } : {}) };
  }
}
