import type * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ApplyRevision } from '../../../agent/act/partial.ts';
import { defaultConfig } from '../../../agent/config/config.ts';
import type { ControllerOptions } from '../../../agent/controller/options.ts';
import { namespacedKinds } from '../../../agent/controller/resources/kinds.ts';
import { runNamespace, type NamespaceRunHost } from '../../../agent/controller/resources/namespace-run.ts';
import { addressOfObject, finalizer, type KubeObject } from '../../../agent/controller/resources/objects.ts';
import type { NamespaceObject } from '../../../agent/controller/resources/status-store.ts';
import { ImageMemory } from '../../../agent/kinds/kit/image-memory.ts';
import { CloudUnreachableError } from '../../../agent/kinds/openstackcloudconnection/index.ts';
import { sharedSchemaRegistry } from '../../../agent/schema/registry.ts';

/**
 * A namespace whose cloud is down (its OpenStackCloudConnection's last probe failed): the run asks
 * the namespace's cloud through the host, gets CloudUnreachableError at once, and stops before the
 * engine: each object's status says Stalled, reason CloudUnreachable, naming the connection, and
 * keeps its OpenStack ID. The run throws, so the queue retries it (the connection's recovery runs it
 * at once). The Kubernetes API is a fake that records the status bodies.
 */
const registry = sharedSchemaRegistry();
const networkKind = namespacedKinds(registry).find((k) => k.kind === 'Network')!;

interface Status {
  id?: string;
  conditions?: { type: string; status: string; reason: string; message: string }[];
}

function setUp(cloudOf: NamespaceRunHost['cloudOf']): { host: NamespaceRunHost; entries: Map<string, NamespaceObject>; statuses: Status[]; engineCalls: string[] } {
  const statuses: Status[] = [];
  const engineCalls: string[] = [];
  const object: KubeObject = {
    apiVersion: 'kupenstack.io/v1alpha1',
    kind: 'Network',
    metadata: { name: 'net', namespace: 'ns', resourceVersion: '1', generation: 1, finalizers: [finalizer] },
    spec: {},
    status: { id: 'n-1', observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled', message: 'in sync', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
  };
  const entries = new Map<string, NamespaceObject>([[addressOfObject('Network', object), { kind: networkKind, object }]]);
  const custom = {
    patchNamespacedCustomObject: (req: { body: unknown }) => Promise.resolve({ ...object, ...(req.body as object) }),
    patchNamespacedCustomObjectStatus: (req: { body: { status: Status } }) => {
      statuses.push(req.body.status);
      return Promise.resolve({ ...object, metadata: { ...object.metadata, resourceVersion: '2' }, status: req.body.status });
    },
  } as unknown as k8s.CustomObjectsApi;
  const engine: ApplyRevision = () => {
    engineCalls.push('engine');
    return Promise.reject(new Error('the engine must not run while the cloud is down'));
  };
  const opts = {
    log: () => undefined,
    debounceMs: 100,
    cloud: () => Promise.reject(new Error('the default cloud must not be asked for: the namespace has a connection')),
    engine,
    registry,
    config: defaultConfig,
    secrets: { get: () => Promise.reject(new Error('none')) },
  };
  const host: NamespaceRunHost = {
    opts: opts as unknown as ControllerOptions,
    custom,
    core: { createNamespacedEvent: () => Promise.resolve({}) } as unknown as k8s.CoreV1Api,
    memory: new Map(),
    recentEvents: new Map(),
    gone: new Set(),
    runs: new Map(),
    fullyRun: new Set(),
    images: () => new ImageMemory(),
    acting: () => true,
    step: () => undefined,
    shardOf: () => 'default',
    labelsOf: () => ({ 'kupenstack.io/cloud': 'fra' }),
    pausedBy: () => undefined,
    cloudOf,
  };
  return { host, entries, statuses, engineCalls };
}

const input = (entries: Map<string, NamespaceObject>): Parameters<typeof runNamespace>[1] => ({
  ns: 'ns',
  terminating: false,
  entries,
  takeMoved: () => undefined,
  signal: new AbortController().signal,
});

describe("a run whose namespace's cloud is down", () => {
  it('stops before the engine; its objects say Stalled, reason CloudUnreachable, naming the connection, and keep their ID', async () => {
    const asked: string[] = [];
    const down = new CloudUnreachableError('fra', 'KeystoneUnreachable', 'Keystone at http://127.0.0.1:1/v3 does not answer: connect ECONNREFUSED');
    const t = setUp((ns) => (asked.push(ns), Promise.reject(down)));
    const err = await runNamespace(t.host, input(t.entries)).catch((e: unknown) => e);
    expect(err).toBe(down);
    expect(asked).toEqual(['ns']);
    expect(t.engineCalls).toEqual([]);
    expect(t.statuses).toHaveLength(1);
    const [status] = t.statuses;
    expect(status?.id).toBe('n-1');
    const byType = Object.fromEntries((status?.conditions ?? []).map((c) => [c.type, c]));
    expect(byType.Stalled).toMatchObject({ status: 'True', reason: 'CloudUnreachable' });
    expect(byType.Ready).toMatchObject({ status: 'False', reason: 'CloudUnreachable' });
    expect(byType.Ready?.message).toContain('OpenStackCloudConnection fra');
    expect(byType.Ready?.message).toContain('KeystoneUnreachable');
  });

  it('says it once: a retry with the same reason writes no status again', async () => {
    const down = new CloudUnreachableError('fra', 'KeystoneUnreachable', 'refused');
    const t = setUp(() => Promise.reject(down));
    await runNamespace(t.host, input(t.entries)).catch(() => undefined);
    const [entry] = t.entries.values();
    entry!.object = { ...entry!.object, status: t.statuses[0] as KubeObject['status'] };
    await runNamespace(t.host, input(t.entries)).catch(() => undefined);
    expect(t.statuses).toHaveLength(1);
  });
});
