/**
 * The namespace label by which the cluster admin puts a namespace on a cloud: its value names an
 * OpenStackCloudConnection. A tenant cannot set it: tenants have no rights on Namespace objects
 * (deploy/rbac/tenant-roles.yaml), the same reason kupenstack.io/admin is trusted.
 */
export const cloudLabel = 'kupenstack.io/cloud';

/** The connection a namespace's labels name; undefined: the controller's default cloud (--cloud). */
export function connectionOf(labels: Readonly<Record<string, string>> | undefined): string | undefined {
  const value = labels?.[cloudLabel];
  return value === undefined || value === '' ? undefined : value;
}
