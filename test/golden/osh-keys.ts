/**
 * Key paths of the real OpenStack-Helm charts' values.yaml at tag 2025.2.0 that KupenStack
 * writes (osh-lifecycle.md §1.3; keystone, glance, nova, neutron share this layout). `*` is
 * a chart-specific name: a component (pod.replicas.api), an image key, a service user.
 * The charts cannot be downloaded here; this list is the contract the values must keep.
 */
export const OSH_KEYS: readonly string[] = [
  'endpoints.cluster_domain_suffix',
  'endpoints.oslo_db.namespace',
  'endpoints.oslo_db.auth.admin.username',
  'endpoints.oslo_db.auth.admin.password',
  'endpoints.oslo_db.auth.*.username',
  'endpoints.oslo_db.auth.*.password',
  'endpoints.oslo_messaging.namespace',
  'endpoints.oslo_messaging.auth.admin.username',
  'endpoints.oslo_messaging.auth.admin.password',
  'endpoints.oslo_messaging.auth.*.username',
  'endpoints.oslo_messaging.auth.*.password',
  'endpoints.oslo_cache.namespace',
  'endpoints.oslo_cache.auth.memcache_secret_key',
  'endpoints.identity.namespace',
  'endpoints.identity.auth.admin.region_name',
  'endpoints.identity.auth.admin.username',
  'endpoints.identity.auth.admin.password',
  'endpoints.identity.auth.admin.project_name',
  'endpoints.identity.auth.admin.user_domain_name',
  'endpoints.identity.auth.admin.project_domain_name',
  'endpoints.identity.auth.*.role',
  'endpoints.identity.auth.*.region_name',
  'endpoints.identity.auth.*.username',
  'endpoints.identity.auth.*.password',
  'endpoints.identity.auth.*.project_name',
  'endpoints.identity.auth.*.user_domain_name',
  'endpoints.identity.auth.*.project_domain_name',
  'pod.replicas.*',
  'images.tags.*',
  'conf.*',
];
