import type * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../schema/registry.ts';
import type { ResourceStatus, RunSummary, StateStore, StoredState } from '../status/store.ts';
import { serverSideApply } from '../kube/client.ts';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import type { WatchedKind } from './kinds.ts';
import type { KubeObject } from './objects.ts';
import { sameStatus, statusBody } from './status-writer.ts';

export const statusManager = 'kupenstack-controller';

export interface NamespaceObject {
  kind: WatchedKind;
  object: KubeObject;
}

/**
 * The engine's StateStore for one namespace: each resource's state lives in
 * its CR's status subresource, written by server-side apply under the
 * controller's own field manager. What status cannot hold (a heal episode's
 * attempts) is kept in memory across runs by `memory`, seeded from status
 * after a restart.
 */
export class KubeStatusStore implements StateStore {
  private readonly api: k8s.CustomObjectsApi;
  private readonly namespace: string;
  private readonly objects: Map<string, NamespaceObject>;
  private readonly memory: Map<string, ResourceStatus>;
  private readonly log: (line: string) => void;
  lastRun?: RunSummary;

  /** Objects left out of this run (invalid specs): what they made in OpenStack is kept, as if detached, instead of pruned as undeclared. */
  private readonly keep: ReadonlySet<string>;

  constructor(api: k8s.CustomObjectsApi, namespace: string, objects: Map<string, NamespaceObject>, memory: Map<string, ResourceStatus>, log: (line: string) => void, keep: ReadonlySet<string> = new Set()) {
    this.keep = keep;
    this.api = api;
    this.namespace = namespace;
    this.objects = objects;
    this.memory = memory;
    this.log = log;
  }

  load(): Promise<StoredState> {
    const resources: Record<string, ResourceStatus> = {};
    for (const [address, { object }] of this.objects) {
      const known = this.memory.get(address);
      const id = typeof object.status?.id === 'string' ? object.status.id : undefined;
      resources[address] = { ...known, ...(id && !known?.id ? { id } : {}), onDelete: object.spec?.onDelete === 'detach' || this.keep.has(address) ? 'detach' : undefined };
    }
    // Objects whose CR is gone but whose OpenStack object stays (onDelete: detach) are remembered, or the next run would prune them.
    for (const [address, known] of this.memory) if (address.startsWith(`${this.namespace}/`) && !resources[address]) resources[address] = known;
    return Promise.resolve({ owner: this.namespace, resources, history: [] });
  }

  async putResource(address: string, state: ResourceStatus | undefined): Promise<void> {
    if (!state) {
      this.memory.delete(address);
      return;
    }
    this.memory.set(address, state);
    const entry = this.objects.get(address);
    if (!entry) return; // The CR is gone (deleted and its finalizer removed): nothing to write to.
    const status = statusBody({ lastSyncTime: new Date().toISOString(), ...state }, entry.object.metadata.generation, entry.kind.statusFields);
    if (sameStatus(entry.object.status, status)) return;
    try {
      const updated = (await this.api.patchNamespacedCustomObjectStatus(
        {
          group,
          version,
          namespace: this.namespace,
          plural: entry.kind.plural,
          name: entry.object.metadata.name,
          fieldManager: statusManager,
          force: true,
          body: { apiVersion, kind: entry.kind.kind, metadata: { name: entry.object.metadata.name, namespace: this.namespace }, status },
        },
        serverSideApply,
      )) as KubeObject;
      // The new resourceVersion too: a finalizer patch later in this run carries it for optimistic concurrency.
      entry.object = { ...entry.object, metadata: { ...entry.object.metadata, resourceVersion: updated.metadata.resourceVersion }, status: updated.status };
    } catch (err) {
      // A CR deleted while the run went on is not an error (StateStore contract); anything else is logged, not thrown: status must not fail a reconcile.
      if (isKubeStatus(err, 404)) return;
      this.log(`status  ${address}: could not write status (${kubeApiError('status write', err).message})`);
    }
  }

  finishRun(run: RunSummary): Promise<void> {
    this.lastRun = run;
    return Promise.resolve();
  }
}
