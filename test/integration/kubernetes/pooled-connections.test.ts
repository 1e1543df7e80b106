import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { CoreV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { kube } from '../../testbed/kubernetes/peer.ts';

// client-node 2.0 gives every request a dispatcher of its own, so each opened (and closed) a TLS connection;
// loadKubeConfig's clients share kept-alive connections (agent/kube/pooled-connections.ts). Counted on the test
// bed's real API server by undici's own diagnostics channel: one event per connection opened.
/** How many connections `work` opened. */
async function connectionsDuring(work: () => Promise<void>): Promise<number> {
  let opened = 0;
  const count = (): void => void opened++;
  subscribe('undici:client:connected', count);
  try {
    await work();
  } finally {
    unsubscribe('undici:client:connected', count);
  }
  return opened;
}

/** Connections opened by `requests` reads, one at a time: each finds the one before's connection idle. */
const connectionsFor = (kc: KubeConfig, requests: number): Promise<number> =>
  connectionsDuring(async () => {
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < requests; i++) await core.readNamespace({ name: 'default' });
  });

describe('connections to the API server', () => {
  it("are kept alive across a client's requests (10 requests, 1 TLS connection), where client-node alone opens one per request", async () => {
    const pooled = loadKubeConfig({ kubeconfig: kube.kubeconfig });
    expect(await connectionsFor(pooled, 10)).toBe(1);
    // Other API clients of the same kubeconfig share them too.
    const opened = await connectionsDuring(async () => {
      expect((await pooled.makeApiClient(VersionApi).getCode()).gitVersion).toBe(kube.version);
    });
    expect(opened).toBe(0);

    // The same kubeconfig through client-node alone: the cost the pool removes.
    const plain = new KubeConfig();
    plain.loadFromFile(kube.kubeconfig);
    expect(await connectionsFor(plain, 10)).toBe(10);
  });
});
