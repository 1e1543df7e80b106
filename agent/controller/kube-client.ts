import * as k8s from '@kubernetes/client-node';

/**
 * The API server connection: a kubeconfig when one is named (tests, a laptop),
 * else the pod's service account (in-cluster). TLS is verified as the
 * kubeconfig says; nothing here turns verification off.
 */
export function loadKubeConfig(kubeconfig?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

/** client-node picks JSON Patch for every patch call unless told otherwise (k8s-testbed.md §7, quirk 1). */
export const serverSideApply = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);
export const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** The HTTP status of a client-node error (ApiException.code), if it has one. */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}
