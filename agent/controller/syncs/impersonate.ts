import { CustomObjectsApi, KubeConfig, type User } from '@kubernetes/client-node';

/** The user name Kubernetes gives a ServiceAccount; RBAC bindings name it so. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * A copy of `kc` whose every request carries `Impersonate-User` (Flux's
 * multi-tenancy): the API server then authorises each write as that user,
 * so a repository can only create what its ServiceAccount may. For a
 * `system:serviceaccount:` user the API server adds the ServiceAccount's
 * groups itself. The controller needs `impersonate` on serviceaccounts.
 */
export function impersonating(kc: KubeConfig, user: string): KubeConfig {
  const current = kc.getCurrentUser();
  if (!current) throw new Error(`kubeconfig context "${kc.getCurrentContext()}" names no user to impersonate from`);
  const copy = new KubeConfig();
  const users: User[] = kc.users.map((u) => (u.name === current.name ? { ...u, impersonateUser: user } : u));
  copy.loadFromOptions({ clusters: kc.clusters, users, contexts: kc.contexts, currentContext: kc.getCurrentContext() });
  return copy;
}

/**
 * The client a Sync writes its revision with: as its ServiceAccount (spec.serviceAccountNamespace, by default the
 * controller's namespace), never as the controller.
 */
export function syncWriter(kc: KubeConfig, serviceAccount: { namespace: string; name: string }): CustomObjectsApi {
  return impersonating(kc, serviceAccountUser(serviceAccount.namespace, serviceAccount.name)).makeApiClient(CustomObjectsApi);
}
