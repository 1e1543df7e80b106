import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthState {
  /** The watches have listed once: the controller knows the cluster. */
  ready: () => boolean;
  /** Whether this replica holds the Lease; undefined without leader election. */
  leader: () => boolean | undefined;
}

/**
 * The controller's probes: `/healthz` (the process answers) and `/readyz`
 * (its watches are synced). A follower is ready too: it must stay up to take
 * over, and readiness is not leadership (`/readyz` says which in its body).
 */
export async function serveHealth(host: string, port: number, state: HealthState): Promise<{ server: Server; address: AddressInfo }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (code: number, body: Record<string, unknown>): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(body)}\n`);
    };
    if (req.method !== 'GET') return send(405, { error: 'GET only' });
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path === '/readyz') {
      const leader = state.leader();
      return state.ready() ? send(200, { status: 'ready', ...(leader === undefined ? {} : { leader }) }) : send(503, { status: 'starting: watches not synced yet' });
    }
    send(404, { error: `no such endpoint ${path}; try /healthz or /readyz` });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, address: server.address() as AddressInfo };
}
