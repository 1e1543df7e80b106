import type * as k8s from '@kubernetes/client-node';
import { mergePatch, serverSideApply } from '../../kube/client.ts';
import { group, version } from '../../schema/registry.ts';

/**
 * The two Sync kinds the loop runs alike: the cluster-scoped `Sync` (the admin's, any namespace its
 * ServiceAccount may write) and the namespaced `NamespaceSync` (a tenant's, its own namespace only, issue 48).
 * Both have the same spec and status (schemas/sync.schema.json); only where they live differs.
 */
export type SyncKindName = 'Sync' | 'NamespaceSync';

export interface SyncKind {
  kind: SyncKindName;
  plural: string;
  namespaced: boolean;
}

export const clusterSyncKind: SyncKind = { kind: 'Sync', plural: 'syncs', namespaced: false };
export const namespaceSyncKind: SyncKind = { kind: 'NamespaceSync', plural: 'namespacesyncs', namespaced: true };

/** One Sync resource: a NamespaceSync has a namespace, a Sync none. */
export interface SyncRef {
  namespace?: string;
  name: string;
}

/** The loop's key of a Sync: `name`, or `namespace/name` for a NamespaceSync (what logs and metrics say). */
export function syncKey(ref: SyncRef): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** `namespace/name` (or `name`) back as a reference. */
export function syncRefOf(key: string): SyncRef {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Reads and writes of one Sync kind's resources, the same calls whatever its scope. */
export class SyncResources {
  readonly kind: SyncKind;
  private readonly custom: k8s.CustomObjectsApi;

  constructor(custom: k8s.CustomObjectsApi, kind: SyncKind) {
    this.custom = custom;
    this.kind = kind;
  }

  get(ref: SyncRef): Promise<unknown> {
    const at = { group, version, plural: this.kind.plural, name: ref.name };
    return ref.namespace ? this.custom.getNamespacedCustomObject({ ...at, namespace: ref.namespace }) : this.custom.getClusterCustomObject(at);
  }

  list(labelSelector?: string): Promise<unknown> {
    // For a namespaced kind the cluster path lists every namespace.
    return this.custom.listClusterCustomObject({ group, version, plural: this.kind.plural, ...(labelSelector !== undefined ? { labelSelector } : {}) });
  }

  /** A merge patch of the resource (annotations, spec.suspend). */
  patch(ref: SyncRef, body: object): Promise<unknown> {
    const at = { group, version, plural: this.kind.plural, name: ref.name, body };
    return ref.namespace
      ? this.custom.patchNamespacedCustomObject({ ...at, namespace: ref.namespace }, mergePatch)
      : this.custom.patchClusterCustomObject(at, mergePatch);
  }

  /** Server-side apply of the whole status by `fieldManager`. */
  applyStatus(ref: SyncRef, status: object, fieldManager: string): Promise<unknown> {
    const metadata = ref.namespace ? { name: ref.name, namespace: ref.namespace } : { name: ref.name };
    const body = { apiVersion: `${group}/${version}`, kind: this.kind.kind, metadata, status };
    const at = { group, version, plural: this.kind.plural, name: ref.name, fieldManager, force: true, body };
    return ref.namespace
      ? this.custom.patchNamespacedCustomObjectStatus({ ...at, namespace: ref.namespace }, serverSideApply)
      : this.custom.patchClusterCustomObjectStatus(at, serverSideApply);
  }
}
