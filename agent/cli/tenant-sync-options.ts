import type { Command } from 'commander';
import type { TenantLockdown } from '../controller/syncs/tenant-lockdown.ts';
import { UsageError } from '../errors.ts';
import { egressFor } from '../net/egress.ts';
import { isDuration, parseDuration } from '../util/duration.ts';

/** The cluster admin's lockdown of tenants' NamespaceSyncs (controller/syncs/tenant-lockdown.ts), as flags. */
export interface TenantSyncOptions {
  tenantSyncs: boolean;
  tenantDefaultServiceAccount?: string;
  tenantMaxSyncs?: string;
  tenantMaxObjects?: string;
  tenantMinInterval?: string;
}

export function withTenantSyncOptions(cmd: Command): Command {
  return cmd
    .option('--no-tenant-syncs', "do not run tenants' NamespaceSyncs (a Sync in a namespace, applying into that namespace only)")
    .option(
      '--tenant-default-service-account <name>',
      'a NamespaceSync without serviceAccountName runs as this ServiceAccount of its own namespace (so it cannot exceed what the admin granted it); ' +
        'without this flag such a NamespaceSync is refused',
    )
    .option('--tenant-max-syncs <n>', 'NamespaceSyncs run per namespace, the oldest first; a later one is Stalled (default: no limit)')
    .option('--tenant-max-objects <n>', "objects a namespace's NamespaceSyncs may apply together; a revision beyond it is rejected (default: no limit)")
    .option('--tenant-min-interval <duration>', "a NamespaceSync's interval and retryInterval may not be shorter, e.g. 1m (default: no floor)");
}

function count(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} ${v}: expected a whole number of at least 1`);
  return n;
}

/**
 * The flags checked, as the lockdown the NamespaceSync loop applies; undefined with --no-tenant-syncs.
 * The source's host is judged by the egress policy of the Sync's namespace (--egress-allow rules by namespace label).
 */
export function tenantLockdownFrom(o: TenantSyncOptions): TenantLockdown | undefined {
  if (!o.tenantSyncs) return undefined;
  const sa = o.tenantDefaultServiceAccount;
  if (sa !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(sa))
    throw new UsageError(`--tenant-default-service-account ${sa}: expected a ServiceAccount name (of the NamespaceSync's namespace), e.g. gitops`);
  if (o.tenantMinInterval !== undefined && !isDuration(o.tenantMinInterval))
    throw new UsageError(`--tenant-min-interval ${o.tenantMinInterval}: not a duration (e.g. 1m)`);
  const maxSyncs = count('--tenant-max-syncs', o.tenantMaxSyncs);
  const maxObjects = count('--tenant-max-objects', o.tenantMaxObjects);
  return {
    ...(sa !== undefined ? { defaultServiceAccount: sa } : {}),
    ...(maxSyncs !== undefined ? { maxSyncsPerNamespace: maxSyncs } : {}),
    ...(maxObjects !== undefined ? { maxObjectsPerNamespace: maxObjects } : {}),
    ...(o.tenantMinInterval !== undefined ? { minIntervalMs: parseDuration(o.tenantMinInterval) } : {}),
    sourceEgress: async (namespace, url) => {
      await egressFor(namespace)?.check(url);
    },
  };
}
