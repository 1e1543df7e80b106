import type * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../../schema/registry.ts';
import type { ResourceStatus, RunSummary, StateStore, StoredState } from '../../status/store.ts';
import { serverSideApply } from '../../kube/client.ts';
import { kubeApiError } from '../../kube/errors.ts';
import type { WatchedKind } from './kinds.ts';
import type { KubeObject } from './objects.ts';
import { unwrittenReason, writeFencedStatus } from './status-fence.ts';
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
 * after a restart. Writes are fenced by the resourceVersion the run last saw
 * (status-fence.ts): a write that leaves a replica paused past its lease meets
 * 409 instead of undoing the new leader's status.
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
  /** True while this replica may write for the namespace: asked again after a 409, before a retry. */
  private readonly acting: () => boolean;

  constructor(
    api: k8s.CustomObjectsApi,
    namespace: string,
    objects: Map<string, NamespaceObject>,
    memory: Map<string, ResourceStatus>,
    log: (line: string) => void,
    keep: ReadonlySet<string> = new Set(),
    acting: () => boolean = () => true,
  ) {
    this.keep = keep;
    this.acting = acting;
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
      resources[address] = {
        ...known,
        ...(id && !known?.id ? { id } : {}),
        onDelete: object.spec?.onDelete === 'detach' || this.keep.has(address) ? 'detach' : undefined,
      };
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
    const name = entry.object.metadata.name;
    const target = { group, version, namespace: this.namespace, plural: entry.kind.plural, name };
    try {
      const outcome = await writeFencedStatus({
        resourceVersion: entry.object.metadata.resourceVersion,
        acting: () => this.acting() && this.objects.has(address),
        apply: async (resourceVersion) => {
          const body = {
            apiVersion,
            kind: entry.kind.kind,
            metadata: { name, namespace: this.namespace, ...(resourceVersion ? { resourceVersion } : {}) },
            status,
          };
          const updated = (await this.api.patchNamespacedCustomObjectStatus(
            { ...target, fieldManager: statusManager, force: true, body },
            serverSideApply,
          )) as KubeObject;
          // The new resourceVersion too: the next status write and a finalizer patch later in this run carry it.
          entry.object = { ...entry.object, metadata: { ...entry.object.metadata, resourceVersion: updated.metadata.resourceVersion }, status: updated.status };
          return updated.metadata.resourceVersion;
        },
        // Changed by someone else (a spec edit, or the new leader): its current version, to write over only while this replica acts.
        read: async () => ((await this.api.getNamespacedCustomObject(target)) as KubeObject).metadata.resourceVersion,
      });
      const why = unwrittenReason(outcome);
      if (why) this.log(`status  ${address}: status not written (${why})`);
    } catch (err) {
      // Status must not fail a reconcile: logged, not thrown (a deleted CR is `gone` above, as the StateStore contract wants).
      this.log(`status  ${address}: could not write status (${kubeApiError('status write', err).message})`);
    }
  }

  finishRun(run: RunSummary): Promise<void> {
    this.lastRun = run;
    return Promise.resolve();
  }
}
