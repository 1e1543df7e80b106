import type * as k8s from '@kubernetes/client-node';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { NamespaceSummary, NamespaceView, ObjectDetail, ObjectSummary } from './api.ts';
import { eventsIfAllowed, getObject, listKind } from './kube-lists.ts';
import { conditionsOf, healthOf, summaryOf, type KubeObject } from './shape.ts';
import { ViewError } from './view-error.ts';

/** The label the Sync loop puts on everything it applied (controller/syncs/inventory.ts syncLabel). */
const syncLabel = 'kupenstack.io/sync';

function namespacedKinds(registry: SchemaRegistry): { kind: string; plural: string }[] {
  return [...registry.kinds.values()].filter((k) => k.scope === 'Namespaced').map((k) => ({ kind: k.kind, plural: k.plural }));
}

/**
 * Every KupenStack object of the namespace (or of all namespaces) by kind,
 * one list per kind, all at once. A kind the person may not list is a 403.
 */
export async function namespaceObjects(kc: k8s.KubeConfig, registry: SchemaRegistry, namespace?: string): Promise<Map<string, KubeObject[]>> {
  const lists = await Promise.all(namespacedKinds(registry).map(async (k) => [k.kind, await listKind(kc, k.plural, namespace)] as const));
  return new Map(lists);
}

/** Objects of every namespace by kind → per namespace, by kind. */
export function byNamespace(all: Map<string, KubeObject[]>): Map<string, Map<string, KubeObject[]>> {
  const out = new Map<string, Map<string, KubeObject[]>>();
  for (const [kind, list] of all)
    for (const o of list) {
      const ns = o.metadata.namespace ?? '';
      const kinds = out.get(ns) ?? new Map<string, KubeObject[]>();
      kinds.set(kind, [...(kinds.get(kind) ?? []), o]);
      out.set(ns, kinds);
    }
  return out;
}

export function namespaceSummaryOf(name: string, objects: Map<string, KubeObject[]>): NamespaceSummary {
  const counts: Record<string, number> = {};
  let ready = 0;
  let stalled = 0;
  let total = 0;
  for (const [kind, list] of objects) {
    if (list.length > 0) counts[kind] = list.length;
    for (const o of list) {
      total++;
      const h = healthOf(conditionsOf(o));
      if (h === 'Ready') ready++;
      if (h === 'Stalled') stalled++;
    }
  }
  return { name, counts, ready, notReady: total - ready, stalled };
}

export async function namespaceView(kc: k8s.KubeConfig, registry: SchemaRegistry, namespace: string): Promise<NamespaceView> {
  const [objects, events] = await Promise.all([namespaceObjects(kc, registry, namespace), eventsIfAllowed(kc, namespace)]);
  const kinds: Record<string, ObjectSummary[]> = {};
  const held: NamespaceView['held'] = [];
  let paused: string | undefined;
  for (const [kind, list] of objects) {
    if (list.length === 0 || kind === 'ProjectQuota') continue;
    kinds[kind] = list.map((o) => summaryOf(o, kind, registry)).sort((a, b) => a.name.localeCompare(b.name));
    for (const o of list) {
      const conditions = conditionsOf(o);
      const ready = conditions.find((c) => c.type === 'Ready');
      const stalled = conditions.find((c) => c.type === 'Stalled' && c.status === 'True');
      if (ready?.reason === 'Paused') paused ??= ready.message;
      const why = stalled ?? (ready?.status === 'False' && /Held|Blocked|Waiting|Paused/.test(ready.reason ?? '') ? ready : undefined);
      if (why) held.push({ kind, name: o.metadata.name, reason: why.reason ?? why.type, message: why.message ?? '' });
    }
  }
  const quotas = (objects.get('ProjectQuota') ?? []).map((q) => ({
    name: q.metadata.name,
    limits: q.spec ?? {},
    ...(q.status?.observed ? { usage: q.status.observed as Record<string, unknown> } : {}),
    health: healthOf(conditionsOf(q)),
  }));
  return { name: namespace, kinds, quotas, held, ...(paused ? { paused } : {}), events };
}

/** One object with its conditions, status, the objects that refer to it and its last Events. */
export async function objectDetail(kc: k8s.KubeConfig, registry: SchemaRegistry, namespace: string, kind: string, name: string): Promise<ObjectDetail> {
  const info = registry.kinds.get(kind);
  if (!info || info.scope !== 'Namespaced') throw new ViewError(404, `${kind} is not one of KupenStack's namespaced kinds`);
  const o = await getObject(kc, info.plural, name, namespace);
  const [objects, events] = await Promise.all([namespaceObjects(kc, registry, namespace), eventsIfAllowed(kc, namespace, { kind, name }, 50)]);
  const referencedBy = [...objects.entries()].flatMap(([k, list]) =>
    list
      .map((x) => summaryOf(x, k, registry))
      .filter((s) => s.refs.some((r) => r.kind === kind && r.name === name))
      .map((s) => ({ kind: s.kind, namespace, name: s.name, ...(s.refs[0]?.field ? { field: s.refs.find((r) => r.kind === kind)?.field ?? '' } : {}) })),
  );
  const sync = o.metadata.labels?.[syncLabel];
  return {
    ...summaryOf(o, kind, registry),
    conditions: conditionsOf(o),
    status: o.status ?? {},
    spec: o.spec ?? {},
    ...(sync ? { sync } : {}),
    referencedBy,
    events,
  };
}
