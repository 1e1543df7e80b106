import type * as k8s from '@kubernetes/client-node';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { HeldPlan, ObjectRef, ObjectSummary, SyncSummary, SyncTree } from './api.ts';
import { eventsIfAllowed, getObject, listKind } from './kube-lists.ts';
import { diagnosticOf, healthOf, iso, conditionsOf, revisionOf, summaryOf, type KubeObject } from './shape.ts';
import type { CommitLookup } from './reader.ts';
import { ViewError } from './view-error.ts';

/** A Sync's status fields the view reads (schemas/sync.schema.json). */
interface SyncStatusView {
  lastSyncTime?: string | Date;
  lastFetchedRevision?: string;
  lastAppliedRevision?: string;
  heldRevision?: string;
  rejectedRevision?: string;
  diagnostics?: string[];
  inventory?: { apiVersion: string; kind: string; namespace?: string; name: string }[];
  health?: { ready?: number; reconciling?: number; stalled?: number; failing?: string[] };
  history?: { revision: string; startedAt: string | Date; duration?: string; result: string; message?: string; counts?: Record<string, number> }[];
}

interface SourceSpec {
  git?: { url: string; ref?: Record<string, string> };
  oci?: { url: string; ref?: Record<string, string> };
  directory?: { path: string };
}

function sourceOf(spec: Record<string, unknown> | undefined): string {
  const s = (spec?.source ?? {}) as SourceSpec;
  const ref = (r?: Record<string, string>): string => {
    const [k, v] = Object.entries(r ?? {})[0] ?? [];
    return k ? ` (${k} ${v})` : '';
  };
  if (s.git) return `${s.git.url}${ref(s.git.ref)}`;
  if (s.oci) return `${s.oci.url}${ref(s.oci.ref)}`;
  return s.directory?.path ?? '';
}

function statusOf(o: KubeObject): SyncStatusView {
  return o.status ?? {};
}

export function syncSummaryOf(o: KubeObject): SyncSummary {
  const st = statusOf(o);
  const conditions = conditionsOf(o);
  const ready = conditions.find((c) => c.type === 'Ready');
  const applied = st.history?.find((h) => h.revision === st.lastAppliedRevision && h.result === 'Succeeded');
  const appliedRev = revisionOf(st.lastAppliedRevision, iso(applied?.startedAt));
  const path = o.spec?.path;
  const synced = iso(st.lastSyncTime);
  const h = st.health;
  return {
    name: o.metadata.name,
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    source: sourceOf(o.spec),
    ...(typeof path === 'string' ? { path } : {}),
    suspended: o.spec?.suspend === true,
    health: healthOf(conditions, o.spec?.suspend === true),
    ...(ready?.reason ? { reason: ready.reason } : {}),
    ...(ready?.message ? { message: ready.message } : {}),
    ...(appliedRev ? { applied: appliedRev } : {}),
    ...(st.lastFetchedRevision ? { fetched: st.lastFetchedRevision } : {}),
    ...(st.heldRevision ? { held: st.heldRevision } : {}),
    ...(st.rejectedRevision ? { rejected: st.rejectedRevision } : {}),
    diagnostics: (st.diagnostics ?? []).map(diagnosticOf),
    ...(h ? { wait: { ready: h.ready ?? 0, reconciling: h.reconciling ?? 0, stalled: h.stalled ?? 0, failing: h.failing ?? [] } } : {}),
    ...(synced ? { lastSyncTime: synced } : {}),
    objects: st.inventory?.length ?? 0,
  };
}

/** Where a Sync's resource and Events are: a cluster Sync's in `default`, a tenant's NamespaceSync's in its namespace. */
function syncPlace(namespace: string | undefined): { plural: string; kind: string; events: string } {
  return namespace ? { plural: 'namespacesyncs', kind: 'NamespaceSync', events: namespace } : { plural: 'syncs', kind: 'Sync', events: 'default' };
}

/**
 * A Sync (or with `namespace` a NamespaceSync) and its inventory as the person can read it: revision → namespaces → objects;
 * a namespace they may not read is marked, not shown.
 */
export async function syncTree(kc: k8s.KubeConfig, registry: SchemaRegistry, name: string, commits?: CommitLookup, namespace?: string): Promise<SyncTree> {
  const place = syncPlace(namespace);
  const o = await getObject(kc, place.plural, name, namespace);
  const st = statusOf(o);
  const inventory = st.inventory ?? [];
  const byNamespace = new Map<string, typeof inventory>();
  for (const e of inventory) if (e.namespace) byNamespace.set(e.namespace, [...(byNamespace.get(e.namespace) ?? []), e]);
  const namespaces = await Promise.all(
    [...byNamespace.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(async ([ns, entries]) => {
        try {
          const [objects, events] = await Promise.all([inventoryRows(kc, registry, ns, entries), eventsIfAllowed(kc, ns, undefined, 20)]);
          return { name: ns, objects, events };
        } catch (err) {
          if (err instanceof ViewError && err.status === 403) return { name: ns, objects: [], forbidden: true };
          throw err;
        }
      }),
  );
  const cluster = await inventoryRows(
    kc,
    registry,
    undefined,
    inventory.filter((e) => !e.namespace),
  ).catch(() => []);
  const summary = await withCommit(o, syncSummaryOf(o), commits);
  return {
    sync: summary,
    ...(summary.applied ? { revision: summary.applied } : {}),
    namespaces,
    cluster,
    history: (st.history ?? []).map((h) => ({ ...h, startedAt: iso(h.startedAt) ?? '' })),
    events: await eventsIfAllowed(kc, place.events, { kind: place.kind, name }, 50),
  };
}

/** The inventory's objects of one namespace (or the cluster-scoped ones), read by kind: one list per kind, not one read per object. */
async function inventoryRows(
  kc: k8s.KubeConfig,
  registry: SchemaRegistry,
  namespace: string | undefined,
  entries: { kind: string; name: string }[],
): Promise<ObjectSummary[]> {
  const kinds = [...new Set(entries.map((e) => e.kind))];
  const found = new Map<string, KubeObject>();
  await Promise.all(
    kinds.map(async (kind) => {
      const plural = registry.kinds.get(kind)?.plural;
      if (!plural) return;
      for (const x of await listKind(kc, plural, namespace)) found.set(`${kind}/${x.metadata.name}`, x);
    }),
  );
  return entries.map((e) => {
    const x = found.get(`${e.kind}/${e.name}`);
    if (x) return summaryOf(x, e.kind, registry);
    return { kind: e.kind, ...(namespace ? { namespace } : {}), name: e.name, health: 'Missing', message: 'not in the cluster', refs: [] };
  });
}

/**
 * A held revision's plan as the cluster knows it: the Sync's status names
 * the held revision, its run's counts and the Ready message (which names the
 * first held deletions and the `kubectl annotate` confirming them); a
 * rejected revision's plan is its diagnostics. Read-only: nothing is fetched
 * or planned again.
 */
export async function heldPlan(kc: k8s.KubeConfig, name: string, namespace?: string): Promise<HeldPlan> {
  const o = await getObject(kc, syncPlace(namespace).plural, name, namespace);
  const st = statusOf(o);
  const ready = conditionsOf(o).find((c) => c.type === 'Ready');
  const message = ready?.message ?? '';
  if (st.heldRevision) {
    const run = st.history?.find((h) => h.revision === st.heldRevision && h.result === 'Held');
    const confirm = /confirm with (kubectl annotate .*)$/.exec(message)?.[1];
    return {
      sync: name,
      revision: st.heldRevision,
      why: 'mass-delete',
      message,
      deletions: heldDeletions(message),
      ...(run?.counts ? { counts: run.counts } : {}),
      diagnostics: [],
      ...(confirm ? { confirm } : {}),
    };
  }
  if (st.rejectedRevision)
    return { sync: name, revision: st.rejectedRevision, why: 'rejected', message, deletions: [], diagnostics: (st.diagnostics ?? []).map(diagnosticOf) };
  throw new ViewError(404, `${syncPlace(namespace).kind} ${namespace ? `${namespace}/` : ''}${name} holds no revision: its newest revision was applied`);
}

/** `…: Kind/ns/name, Kind/name` as the controller's held message lists the first deletions (sync-worker.ts describeEntry). */
function heldDeletions(message: string): ObjectRef[] {
  const list = /guard \(massDeleteThreshold [^)]*\): (.*?); confirm with/.exec(message)?.[1] ?? '';
  return list
    .split(', ')
    .map((s) => s.trim().split('/'))
    .filter((p) => p.length >= 2)
    .map((p) => (p.length >= 3 ? { kind: p[0]!, namespace: p[1]!, name: p.slice(2).join('/') } : { kind: p[0]!, name: p[1]! }));
}

export async function syncSummaries(kc: k8s.KubeConfig, commits?: CommitLookup): Promise<SyncSummary[]> {
  const syncs = await listKind(kc, 'syncs');
  const rows = await Promise.all(syncs.map((o) => withCommit(o, syncSummaryOf(o), commits)));
  return rows.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Tenants' NamespaceSyncs the person may read: one list for who may list them everywhere, else one per namespace
 * they read (a namespace refused, or a cluster without the kind, adds none).
 */
export async function namespaceSyncSummaries(kc: k8s.KubeConfig, namespaces: () => Promise<string[]>, commits?: CommitLookup): Promise<SyncSummary[]> {
  const quiet = (err: unknown): KubeObject[] => {
    if (err instanceof ViewError && (err.status === 403 || err.status === 404)) return [];
    throw err;
  };
  let all: KubeObject[] | undefined;
  try {
    all = await listKind(kc, 'namespacesyncs');
  } catch (err) {
    if (!(err instanceof ViewError && err.status === 403)) all = quiet(err);
  }
  const objects = all ?? (await Promise.all((await namespaces()).map((n) => listKind(kc, 'namespacesyncs', n).catch(quiet)))).flat();
  const rows = await Promise.all(objects.map((o) => withCommit(o, syncSummaryOf(o), commits)));
  return rows.sort((a, b) => `${a.namespace ?? ''}/${a.name}`.localeCompare(`${b.namespace ?? ''}/${b.name}`));
}

/** The applied revision's commit message, author and time, where the Sync follows Git and the cache holds the commit. */
export async function withCommit(o: KubeObject, s: SyncSummary, commits?: CommitLookup): Promise<SyncSummary> {
  const url = ((o.spec?.source ?? {}) as SourceSpec).git?.url;
  if (!commits || !url || !s.applied?.commit) return s;
  const c = await commits(url, s.applied.commit).catch(() => undefined);
  return c ? { ...s, applied: { ...s.applied, message: c.message, author: c.author, when: c.when } } : s;
}
