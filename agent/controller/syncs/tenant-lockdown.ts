import { formatDiagnostic } from '../../diagnostic.ts';
import type { SyncSpec } from '../../model/kinds.generated.ts';
import type { SecretKey, SecretName, SecretResolver } from '../../secrets/resolver.ts';
import type { SyncConfig } from '../../sync/settings.ts';
import type { DesiredObject } from './cluster-apply.ts';

/**
 * The cluster admin's lockdown of tenants' NamespaceSyncs (Flux's multi-tenancy flags:
 * --no-cross-namespace-refs, --default-service-account), as controller flags and Helm values.
 * A NamespaceSync never reaches across namespaces, whatever the flags (Flux's --no-cross-namespace-refs always on):
 * it applies into its own namespace only, as a ServiceAccount of that namespace, with Secrets of that namespace,
 * after NamespaceSyncs of that namespace (dependsOn names no namespace). These settings narrow it further.
 */
export interface TenantLockdown {
  /** The ServiceAccount (of the Sync's namespace) a NamespaceSync without serviceAccountName runs as; without it such a Sync is refused. */
  defaultServiceAccount?: string;
  /** At most this many NamespaceSyncs run per namespace (the oldest first); the others are Stalled. */
  maxSyncsPerNamespace?: number;
  /** A revision that would make a namespace hold more objects applied by its NamespaceSyncs is rejected. */
  maxObjectsPerNamespace?: number;
  /** interval and retryInterval below this are refused. */
  minIntervalMs?: number;
  /** Judges a source URL through the egress policy of the namespace (throws EgressRefused); undefined: no policy. */
  sourceEgress?: (namespace: string, url: string) => Promise<void>;
}

export const noLockdown: TenantLockdown = {};

/** A spec a NamespaceSync may not have, as [field path, message]; undefined when it may run. */
export function tenantSpecProblem(spec: SyncSpec, sync: SyncConfig, lockdown: TenantLockdown): [(string | number)[], string] | undefined {
  if (spec.serviceAccountNamespace !== undefined)
    return [['serviceAccountNamespace'], 'a NamespaceSync runs as a ServiceAccount of its own namespace: remove serviceAccountNamespace'];
  if (!spec.serviceAccountName && !lockdown.defaultServiceAccount)
    return [
      ['serviceAccountName'],
      'set the ServiceAccount of this namespace whose RBAC decides what this repository may create (the cluster sets no default ServiceAccount)',
    ];
  const floor = lockdown.minIntervalMs;
  if (floor !== undefined) {
    const short = (['interval', 'retryInterval'] as const).find((k) => (k === 'interval' ? sync.intervalMs : sync.retryIntervalMs) < floor);
    const min = `${Math.ceil(floor / 1000)}s`;
    if (short) return [[short], `below the cluster's floor for NamespaceSyncs, ${min} (--tenant-min-interval): set ${short}: ${min} or more`];
  }
  return undefined;
}

/** The ServiceAccount a NamespaceSync writes as: its own, else the admin's default (both of its namespace). */
export function tenantServiceAccount(spec: SyncSpec, namespace: string, lockdown: TenantLockdown): { namespace: string; name: string } {
  return { namespace, name: spec.serviceAccountName ?? lockdown.defaultServiceAccount ?? '' };
}

/**
 * Objects a NamespaceSync may not apply, as `file:line:col: …` at their namespace: one of another namespace, or a
 * cluster-scoped kind. One such manifest rejects the whole revision (nothing of it is written).
 */
export function outsideNamespace(objects: DesiredObject[], namespace: string): string[] {
  return objects.flatMap((o) => {
    if (o.entry.namespace === namespace) return [];
    const path = o.entry.namespace === undefined ? ['kind'] : ['metadata', 'namespace'];
    const pos = o.manifest.source.position(path);
    const message =
      o.entry.namespace === undefined
        ? `${o.entry.kind} is cluster-scoped: a NamespaceSync applies only into its namespace ${namespace}; ask the cluster admin's Sync for it`
        : `namespace ${o.entry.namespace} is not this NamespaceSync's namespace ${namespace}: a NamespaceSync applies only into its own namespace`;
    return [
      formatDiagnostic({
        code: 'sync.namespace',
        file: o.file,
        line: pos.line,
        column: pos.column,
        kind: o.entry.kind,
        name: o.entry.name,
        path: path.join('.'),
        message,
      }),
    ];
  });
}

/** The objects limit per namespace: a refusal when this revision and the namespace's other NamespaceSyncs hold more. */
export function overObjectLimit(objects: number, others: number, namespace: string, lockdown: TenantLockdown): string | undefined {
  const max = lockdown.maxObjectsPerNamespace;
  if (max === undefined || objects + others <= max) return undefined;
  return `${objects} objects in this revision and ${others} of the other NamespaceSyncs of ${namespace} exceed the cluster's limit of ${max} per namespace (--tenant-max-objects)`;
}

/** The Secrets a NamespaceSync reads are of its namespace, whatever a reference says: a tenant cannot read another namespace's. */
export function namespacedSecrets(secrets: SecretResolver, namespace: string): SecretResolver {
  const pin = <T extends SecretName>(ref: T): T => ({ ...ref, namespace });
  const getAll = secrets.getAll?.bind(secrets);
  return {
    get: (ref: SecretKey) => secrets.get(pin(ref)),
    ...(getAll ? { getAll: (ref: SecretName) => getAll(pin(ref)) } : {}),
  };
}

/** The source's URL judged by the namespace's egress policy (ssh:// by its host and port, as an http URL would be). */
export async function checkSourceEgress(sync: SyncConfig, namespace: string, lockdown: TenantLockdown): Promise<void> {
  const judge = lockdown.sourceEgress;
  const url =
    sync.source.git?.url ?? (sync.source.oci ? sync.source.oci.url.replace(/^oci:\/\//, sync.source.oci.insecure ? 'http://' : 'https://') : undefined);
  if (!judge || !url) return;
  const u = new URL(url);
  await judge(namespace, u.protocol === 'ssh:' ? `http://${u.hostname.includes(':') ? `[${u.hostname}]` : u.hostname}:${u.port || '22'}/` : url);
}
