import type { KubeConfig, RequestContext } from '@kubernetes/client-node';

/**
 * The same cluster and credentials, with every write request (any method but GET) passing
 * `gate` first, which throws to stop it: a write gate given to the code that writes as an
 * argument, so that code needs no callback to ask whether it may still write. Reads pass.
 * Every generated client and KubernetesObjectApi made from the result goes through it.
 */
export function gatedWrites(kc: KubeConfig, gate: () => void): KubeConfig {
  const gated = Object.create(kc) as KubeConfig;
  gated.applySecurityAuthentication = async (context: RequestContext): Promise<void> => {
    if (context.getHttpMethod() !== 'GET') gate();
    await kc.applySecurityAuthentication(context);
  };
  return gated;
}
