import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiContactVerdict } from './api-contact.ts';

export interface HealthState {
  /** The watches have listed once: the controller knows the cluster. */
  ready: () => boolean;
  /** Whether this replica holds the Lease; undefined without leader election. */
  leader: () => boolean | undefined;
  /** Contact with the API server (agent/controller/api-contact.ts); without it `/healthz` only says the process answers. */
  live?: () => ApiContactVerdict;
  /** With --shards: the shards whose Lease this replica holds. */
  shards?: () => string[];
  /** More endpoints on the same port (the Sync loop's /metrics and POST /hooks/<sync>); true when it answered. */
  extra?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;
}

/**
 * The controller's probes: `/healthz` (the process answers and the API
 * server answers it: a replica cut off from it is restarted by the kubelet)
 * and `/readyz` (its watches are synced). A follower is ready too: it must stay up to take
 * over, and readiness is not leadership (`/readyz` says which in its body).
 */
export async function serveHealth(host: string, port: number, state: HealthState): Promise<{ server: Server; address: AddressInfo }> {
  const server = createServer(
    (req, res) =>
      void answer(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":"internal error"}\n');
      }),
  );
  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
    const send = (code: number, body: Record<string, unknown>): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(body)}\n`);
    };
    if (state.extra && (await state.extra(req, res, path))) return;
    if (req.method !== 'GET') return send(405, { error: 'GET only' });
    if (path === '/healthz') {
      const live = state.live?.();
      if (!live) return send(200, { status: 'ok' });
      return live.ok
        ? send(200, { status: 'ok', apiServerAnsweredSecondsAgo: live.sinceSeconds })
        : send(503, { status: `no answer from the API server for ${live.sinceSeconds} s`, ...(live.lastError ? { lastError: live.lastError } : {}) });
    }
    if (path === '/readyz') {
      const leader = state.leader();
      return state.ready()
        ? send(200, { status: 'ready', ...(leader === undefined ? {} : { leader }), ...(state.shards ? { shards: state.shards() } : {}) })
        : send(503, { status: 'starting: watches not synced yet' });
    }
    send(404, { error: `no such endpoint ${path}; try /healthz or /readyz${state.extra ? ', /metrics, POST /hooks/<sync> or POST /hooks/registry' : ''}` });
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, address: server.address() as AddressInfo };
}
