import type { KubeConfig } from '@kubernetes/client-node';

/** How long one pool serves before the next request builds another from the kubeconfig again (a rotated client certificate or CA then reaches new connections). */
export const poolLifetimeMs = 5 * 60_000;

type Context = Parameters<KubeConfig['applySecurityAuthentication']>[0];
type Dispatcher = NonNullable<ReturnType<Context['getDispatcher']>>;

/**
 * Kept-alive connections to the API server for every client made from `kc`. client-node 2.0 gives each request a
 * dispatcher of its own (KubeConfig.applySecurityAuthentication builds a new undici Agent every time), so every
 * request opened a TLS connection, built a secure context from the CA and client certificate, and closed it: in a
 * first apply of 300 objects, ~2 of the controller's 4.5 CPU-s, and the API server's handshakes beside. Here the
 * first request's dispatcher options (client-node's own, `createDispatcherOptions`) build one Agent of the same
 * class, which later requests share for `poolLifetimeMs`. A proxy or SOCKS dispatcher is left as client-node makes it.
 */
export function poolConnections(kc: KubeConfig): KubeConfig {
  const apply = kc.applySecurityAuthentication.bind(kc);
  let pool: { dispatcher: Dispatcher | undefined; until: number } | undefined;
  kc.applySecurityAuthentication = async (context: Context): Promise<void> => {
    await apply(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    if (!pool || Date.now() >= pool.until) pool = { dispatcher: await build(kc, fresh), until: Date.now() + poolLifetimeMs };
    // The fresh Agent never connected: dropped, it holds nothing.
    if (pool.dispatcher) context.setDispatcher(pool.dispatcher);
  };
  return kc;
}

/** One Agent as client-node builds it for this kubeconfig (its class and connect options), or none where it builds a proxy. */
async function build(kc: KubeConfig, fresh: Dispatcher): Promise<Dispatcher | undefined> {
  const tls: Parameters<KubeConfig['createDispatcherOptions']>[1] = {};
  await kc.applyToHTTPSOptions(tls);
  const options = kc.createDispatcherOptions(kc.getCurrentCluster(), tls);
  if (options.type !== 'agent') return undefined;
  const { connect } = options;
  const Agent = fresh.constructor as new (o: { connect: typeof connect }) => Dispatcher;
  return new Agent({ connect });
}
