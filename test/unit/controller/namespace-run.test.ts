import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplyReport, EngineDeps } from '../../../agent/act/apply.ts';
import type { ApplyRevision } from '../../../agent/act/partial.ts';
import { defaultConfig } from '../../../agent/config/config.ts';
import { namespacedKinds } from '../../../agent/controller/resources/kinds.ts';
import { runNamespace, type NamespaceRunHost } from '../../../agent/controller/resources/namespace-run.ts';
import { addressOfObject, finalizer, type KubeObject } from '../../../agent/controller/resources/objects.ts';
import type { ControllerOptions } from '../../../agent/controller/options.ts';
import type { NamespaceObject } from '../../../agent/controller/resources/status-store.ts';
import { ImageMemory } from '../../../agent/kinds/kit/image-memory.ts';
import { KubeApiError } from '../../../agent/kube/errors.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { sharedSchemaRegistry } from '../../../agent/schema/registry.ts';

/**
 * One namespace's run hands the engine its cloud gated by the run's finalizers (no hook found at run
 * time): the engine's first write leaves after them, and a hold of the gate or of the engine comes back
 * to the queue as the look-again, a value, not as an error. A loopback server plays Keystone and Neutron;
 * the Kubernetes API is a fake that answers the finalizer patches; the engine is a stand-in that writes once.
 */
let server: Server;
let base: string;
const arrivals: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === '/v3/auth/tokens') {
      const catalog = [{ type: 'network', endpoints: [{ interface: 'public', url: `${base}/network` }] }];
      res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': 'token' });
      res.end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString(), user: { id: 'u' }, catalog } }));
      return;
    }
    arrivals.push(`${req.method} ${req.url}`);
    res.writeHead(201, { 'content-type': 'application/json' }).end('{"network":{"id":"n1"}}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const registry = sharedSchemaRegistry();
const networkKind = namespacedKinds(registry).find((k) => k.kind === 'Network')!;
const debounceMs = 700;

function report(overrides: Partial<ApplyReport> = {}): ApplyReport {
  const counts = { created: 0, updated: 0, deleted: 0, healed: 0, unchanged: 0 };
  return { ...counts, revision: 'r', held: [], errors: [], apiCalls: { read: 0, write: 0 }, drift: [], warnings: [], changes: [], images: [], observed: {}, kinds: {}, progressing: [], ...overrides } as ApplyReport;
}

/** A run of namespace `ns` with one Network without the finalizer; `patch` answers the finalizer's patch. */
function setUp(engine: ApplyRevision, patch: (o: KubeObject) => Promise<KubeObject>): { host: NamespaceRunHost; entries: Map<string, NamespaceObject>; log: string[]; order: string[] } {
  const log: string[] = [];
  const order: string[] = [];
  const object: KubeObject = { apiVersion: 'kupenstack.io/v1alpha1', kind: 'Network', metadata: { name: 'net', namespace: 'ns', resourceVersion: '1', generation: 1 }, spec: { mtu: 1400 } };
  const entries = new Map<string, NamespaceObject>([[addressOfObject('Network', object), { kind: networkKind, object }]]);
  const cloud = new OpenStackCloud({ name: 'unit', file: 'clouds.yaml', authUrl: `${base}/v3`, credentials: { type: 'password', username: 'u', password: 'p' }, interface: 'public', verify: true });
  const custom = {
    patchNamespacedCustomObject: async () => {
      // Slower than the token and the write: a write not gated would overtake it.
      await new Promise((r) => setTimeout(r, 500));
      order.push('finalizer patched');
      return patch(object);
    },
  } as unknown as k8s.CustomObjectsApi;
  const opts = { log: (l: string) => log.push(l), debounceMs, cloud: () => Promise.resolve(cloud), engine, registry, config: defaultConfig, secrets: { get: () => Promise.reject(new Error('none')) } };
  const host: NamespaceRunHost = {
    opts: opts as unknown as ControllerOptions,
    custom,
    core: {} as k8s.CoreV1Api,
    memory: new Map(),
    recentEvents: new Map(),
    gone: new Set(),
    runs: new Map(),
    fullyRun: new Set(),
    images: () => new ImageMemory(),
    acting: () => true,
    step: () => undefined,
    shardOf: () => 'default',
    labelsOf: () => ({}),
    pausedBy: () => undefined,
  };
  return { host, entries, log, order };
}

/** An engine that sends one create through the cloud it is given. */
const writesOnce =
  (order: () => string[]): ApplyRevision =>
  async (_input, deps: EngineDeps) => {
    await deps.cloud.client('network').post('/networks', { network: { name: 'net' } });
    order().push('POST sent and answered');
    return report({ created: 1 });
  };

const run = (entries: Map<string, NamespaceObject>): Parameters<typeof runNamespace>[1] => ({ ns: 'ns', terminating: false, entries, takeMoved: () => undefined, signal: new AbortController().signal });

describe("a namespace's run", () => {
  it("sends the engine's first write after the finalizers are set, and counts the run", async () => {
    arrivals.length = 0;
    let order: string[] = [];
    const t = setUp(
      writesOnce(() => order),
      (o) => Promise.resolve({ ...o, metadata: { ...o.metadata, finalizers: [finalizer], resourceVersion: '2' } }),
    );
    order = t.order;
    expect(await runNamespace(t.host, run(t.entries))).toBeUndefined();
    expect(order).toEqual(['finalizer patched', 'POST sent and answered']);
    expect(arrivals).toEqual(['POST /network/v2.0/networks']);
    expect(t.log.find((l) => l.startsWith('reconciled ns '))).toMatch(/: 1 created, /);
    expect(t.log.find((l) => l.startsWith('timing  ns: '))).toMatch(/validated .*cloud .*engine/);
    expect(t.host.fullyRun.has('ns')).toBe(true);
    expect(t.host.runs.get('ns')).toBe(1);
  });

  it('holds every write when an object left Kubernetes before its finalizer was set: the look-again comes back, nothing is sent', async () => {
    arrivals.length = 0;
    let order: string[] = [];
    const t = setUp(
      writesOnce(() => order),
      () => Promise.reject(new KubeApiError('patch', 404, 'NotFound', 'gone')),
    );
    order = t.order;
    expect(await runNamespace(t.host, run(t.entries))).toBe(debounceMs);
    expect(arrivals).toEqual([]);
    // Held whole: no `reconciled` line, not counted, not a full pass that a targeted run may trust.
    expect(t.log.some((l) => l.startsWith('reconciled '))).toBe(false);
    expect(t.host.runs.get('ns')).toBeUndefined();
    expect(t.host.fullyRun.has('ns')).toBe(false);
  });

  it("answers the engine's own hold (creates a dead process sent still landing) as the look-again", async () => {
    const t = setUp(
      () => Promise.resolve(report({ waiting: { reason: '1 creates an earlier run sent may still be landing', afterMs: 2_000 } })),
      (o) => Promise.resolve({ ...o, metadata: { ...o.metadata, finalizers: [finalizer] } }),
    );
    expect(await runNamespace(t.host, run(t.entries))).toBe(2_000);
    expect(t.log.some((l) => l.startsWith('reconciled '))).toBe(false);
  });

  it('answers the soonest look-again of what OpenStack is still working on', async () => {
    const t = setUp(
      () => Promise.resolve(report({ progressing: [{ address: 'ns/Network/net', reason: 'building', afterMs: 3_000 }] })),
      (o) => Promise.resolve({ ...o, metadata: { ...o.metadata, finalizers: [finalizer] } }),
    );
    expect(await runNamespace(t.host, run(t.entries))).toBe(3_000);
    expect(t.log.find((l) => l.startsWith('reconciled ns '))).toMatch(/1 progressing \(looked at again in 3 s\)/);
  });

  // The member policy is judged by the namespace's label: a tenant's admin-only field is refused before the
  // engine sees it (AdminOnly); the same object in an admin namespace goes to the engine.
  it("keeps a tenant namespace's admin-only object from the engine, and hands an admin namespace's to it", async () => {
    const seen = async (labels: Record<string, string>): Promise<string[]> => {
      let manifests: string[] = [];
      const t = setUp(
        (input) => ((manifests = input.validated.manifests.map((m) => m.address)), Promise.resolve(report())),
        (o) => Promise.resolve({ ...o, metadata: { ...o.metadata, finalizers: [finalizer], resourceVersion: '2' } }),
      );
      const statuses: unknown[] = [];
      const custom = Object.assign(Object.create(t.host.custom) as k8s.CustomObjectsApi, {
        patchNamespacedCustomObjectStatus: (req: { body: unknown }) => (statuses.push(req.body), Promise.resolve({})),
      });
      for (const e of t.entries.values()) e.object.spec = { shared: true };
      await runNamespace({ ...t.host, custom, labelsOf: () => labels }, run(t.entries));
      return [...manifests, ...(JSON.stringify(statuses).includes('AdminOnly') ? ['AdminOnly'] : [])];
    };
    expect(await seen({})).toEqual(['AdminOnly']);
    expect(await seen({ 'kupenstack.io/admin': 'true' })).toEqual(['ns/Network/net']);
  });
});
