import type { SchemaRegistry } from '../schema/registry.ts';
import type { CloudView, Condition, HeldPlan, ImagesView, NamespaceView, ObjectDetail, ObjectSummary, Overview, SyncTree } from './api.ts';
import { namespaceSummaryOf } from './read-namespace.ts';
import { syncSummaryOf } from './read-syncs.ts';
import type { ViewReader } from './reader.ts';
import { conditionsOf, diagnosticOf, summaryOf, type KubeObject } from './shape.ts';
import { ViewError } from './view-error.ts';

/** One resource as the standalone agent's state file keeps it (status/store.ts ResourceStatus, the fields the view shows). */
export interface LocalResource {
  id?: string;
  message?: string;
  conditions?: Condition[];
  observed?: Record<string, unknown>;
  lastSyncTime?: string;
}

/** One Sync of `kupenstack agent` as the view reads it: its status (sync/status.ts) and its resources by address (`ns/Kind/name`). */
export interface LocalSync {
  name: string;
  source: string;
  suspended: boolean;
  status: {
    conditions: Condition[];
    lastFetchedRevision?: string;
    lastAppliedRevision?: string;
    rejectedRevision?: string;
    rejectedBecause?: string[];
    lastSyncTime?: string;
    history: { revision: string; startedAt: string; duration?: string; result: string; message?: string; counts?: Record<string, number> }[];
  };
  resources: Record<string, LocalResource>;
}

/** The agent's state now (read again on every request: it is the agent's memory and its state files). */
export type LocalState = () => Promise<LocalSync[]>;

function syncObject(s: LocalSync): KubeObject {
  const { rejectedBecause, ...status } = s.status;
  return {
    metadata: { name: s.name },
    spec: { suspend: s.suspended, source: { directory: { path: s.source } } },
    status: { ...status, ...(rejectedBecause ? { diagnostics: rejectedBecause } : {}), inventory: Object.keys(s.resources).map((a) => entryOf(a)) },
  };
}

function entryOf(address: string): { apiVersion: string; kind: string; namespace?: string; name: string } {
  const parts = address.split('/');
  return parts.length >= 3
    ? { apiVersion: 'kupenstack.io/v1alpha1', namespace: parts[0]!, kind: parts[1]!, name: parts.slice(2).join('/') }
    : { apiVersion: 'kupenstack.io/v1alpha1', kind: parts[0]!, name: parts.slice(1).join('/') };
}

function resourceObject(address: string, r: LocalResource): { kind: string; object: KubeObject } {
  const e = entryOf(address);
  const conditions = r.conditions ?? [];
  return {
    kind: e.kind,
    object: {
      metadata: { name: e.name, ...(e.namespace ? { namespace: e.namespace } : {}) },
      status: {
        conditions,
        ...(r.id ? { id: r.id } : {}),
        ...(r.observed ? { observed: r.observed } : {}),
        ...(r.lastSyncTime ? { lastSyncTime: r.lastSyncTime } : {}),
      },
    },
  };
}

/**
 * The view over `kupenstack agent`'s own state (issue 52, standalone): the
 * same API as in the cluster, read from the agent's Syncs and their state
 * files. There is no RBAC here: whoever may use the view sees every Sync
 * (loopback only, or a token the operator named: local-backend.ts).
 */
export class LocalViewReader implements ViewReader {
  readonly #state: LocalState;
  readonly #registry: SchemaRegistry;

  constructor(state: LocalState, registry: SchemaRegistry) {
    this.#state = state;
    this.#registry = registry;
  }

  /** Every resource of every Sync, by namespace then kind. */
  private async objects(): Promise<Map<string, Map<string, KubeObject[]>>> {
    const out = new Map<string, Map<string, KubeObject[]>>();
    for (const s of await this.#state())
      for (const [address, r] of Object.entries(s.resources)) {
        const { kind, object } = resourceObject(address, r);
        const ns = object.metadata.namespace ?? '';
        const kinds = out.get(ns) ?? new Map<string, KubeObject[]>();
        kinds.set(kind, [...(kinds.get(kind) ?? []), object]);
        out.set(ns, kinds);
      }
    return out;
  }

  async overview(): Promise<Overview> {
    const syncs = (await this.#state()).map((s) => syncSummaryOf(syncObject(s)));
    const namespaces = [...(await this.objects()).entries()].filter(([n]) => n !== '').map(([n, kinds]) => namespaceSummaryOf(n, kinds));
    return { syncs, namespaces: namespaces.sort((a, b) => a.name.localeCompare(b.name)), clouds: [], forbidden: [] };
  }

  private async one(name: string, namespace?: string): Promise<LocalSync> {
    // The agent runs its kupenstack.yaml's Syncs: none is a tenant's NamespaceSync.
    const s = namespace === undefined ? (await this.#state()).find((x) => x.name === name) : undefined;
    if (!s) throw new ViewError(404, `no Sync named ${name} in this agent`);
    return s;
  }

  async sync(name: string, namespace?: string): Promise<SyncTree> {
    const s = await this.one(name, namespace);
    const summary = syncSummaryOf(syncObject(s));
    const rows = Object.entries(s.resources).map(([a, r]) => {
      const { kind, object } = resourceObject(a, r);
      return summaryOf(object, kind, this.#registry);
    });
    const byNs = new Map<string, ObjectSummary[]>();
    for (const r of rows) if (r.namespace) byNs.set(r.namespace, [...(byNs.get(r.namespace) ?? []), r]);
    return {
      sync: summary,
      ...(summary.applied ? { revision: summary.applied } : {}),
      namespaces: [...byNs.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([n, objects]) => ({ name: n, objects })),
      cluster: rows.filter((r) => !r.namespace),
      history: s.status.history,
      events: [],
    };
  }

  async plan(name: string, namespace?: string): Promise<HeldPlan> {
    const s = await this.one(name, namespace);
    if (!s.status.rejectedRevision) throw new ViewError(404, `Sync ${name} holds no revision (kupenstack plan shows what the next one would do)`);
    const message = s.status.conditions.find((c) => c.type === 'Ready')?.message ?? '';
    return {
      sync: name,
      revision: s.status.rejectedRevision,
      why: 'rejected',
      message,
      deletions: [],
      diagnostics: (s.status.rejectedBecause ?? []).map(diagnosticOf),
    };
  }

  async namespace(namespace: string): Promise<NamespaceView> {
    const kinds = (await this.objects()).get(namespace);
    if (!kinds) throw new ViewError(404, `no object of this agent is in namespace ${namespace}`);
    const view: NamespaceView = { name: namespace, kinds: {}, quotas: [], held: [], events: [] };
    for (const [kind, list] of kinds) view.kinds[kind] = list.map((o) => summaryOf(o, kind, this.#registry)).sort((a, b) => a.name.localeCompare(b.name));
    return view;
  }

  async object(namespace: string, kind: string, name: string): Promise<ObjectDetail> {
    const o = (await this.objects())
      .get(namespace)
      ?.get(kind)
      ?.find((x) => x.metadata.name === name);
    if (!o) throw new ViewError(404, `${kind} ${namespace}/${name}: not in this agent's state`);
    return { ...summaryOf(o, kind, this.#registry), conditions: conditionsOf(o), status: o.status ?? {}, spec: {}, referencedBy: [], events: [] };
  }

  async images(): Promise<ImagesView> {
    const rows = [...(await this.objects()).entries()].flatMap(([namespace, kinds]) =>
      (kinds.get('Image') ?? []).map((o) => {
        const s = summaryOf(o, 'Image', this.#registry);
        return { namespace, name: s.name, source: '', health: s.health, ...(s.openstackId ? { openstackId: s.openstackId } : {}), versions: [], usedBy: [] };
      }),
    );
    return { images: rows, forbidden: [] };
  }

  clouds(): Promise<CloudView[]> {
    return Promise.resolve([]);
  }

  cloud(name: string): Promise<CloudView> {
    return Promise.reject(new ViewError(404, `the standalone agent drives no OpenStackCloud resource named ${name} the view can read`));
  }
}
