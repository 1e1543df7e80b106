import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendJson } from '../hooks/http-json.ts';
import { HookSlots } from '../hooks/in-flight.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { Logger } from '../telemetry/logger.ts';
import { MetricsGate, type MetricsAccess } from '../telemetry/metrics-access.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import type { ApiContact } from './api-contact.ts';
import { serveHealth } from './health.ts';
import type { Leadership } from './leadership.ts';
import { registryHookHandler } from './registry-hook.ts';
import type { Controller } from './resources/controller.ts';
import { syncHttpHandler } from './syncs/hooks.ts';
import type { SyncLoop } from './syncs/sync-loop.ts';
import { syncRefOf } from './syncs/sync-kind.ts';
import { namespacedSecrets } from './syncs/tenant-lockdown.ts';

/** What the controller's `--listen` server answers from. */
export interface RouteSettings {
  listen: { host: string; port: number };
  /** The registry hook's shared secret, its namespace filled in (the controller's own by default); undefined: registry notifications are refused. */
  registryHookSecret?: { namespace: string; name: string; key: string };
  controller: Controller;
  syncs?: SyncLoop;
  /** Tenants' NamespaceSyncs: their Git hooks are `POST /hooks/<namespace>/<name>`. */
  tenantSyncs?: SyncLoop;
  secrets: SecretResolver;
  metrics: AgentMetrics;
  /** Who may read /metrics (telemetry/metrics-access.ts); default: loopback only. */
  metricsAccess?: MetricsAccess;
  logger: Logger;
  apiContact: ApiContact;
  leadership: Leadership;
  /** Every loop has started (/readyz). */
  ready: () => boolean;
}

/**
 * The in-cluster front end's HTTP side: `/healthz` (the API server answers
 * this replica) and `/readyz` (health.ts), `/metrics`, registry notifications
 * (`POST /hooks/registry`, registry-hook.ts) and the Syncs' Git hooks
 * (`POST /hooks/<sync>`, syncs/hooks.ts).
 */
export async function serveRoutes(o: RouteSettings): Promise<AddressInfo> {
  const { elector, shardSet } = o.leadership;
  const { address } = await serveHealth(o.listen.host, o.listen.port, {
    ready: o.ready,
    live: () => o.apiContact.verdict(),
    leader: () => (shardSet ? shardSet.held().length > 0 : elector?.isLeader()),
    ...(shardSet ? { shards: () => shardSet.held() } : {}),
    extra: controllerRoutes(o),
  });
  return address;
}

/** The routes beside the probes: /metrics behind its gate, the hooks behind a cap on requests in flight (429 beyond). */
export function controllerRoutes(
  o: Pick<RouteSettings, 'registryHookSecret' | 'controller' | 'syncs' | 'tenantSyncs' | 'secrets' | 'metrics' | 'metricsAccess' | 'logger'>,
): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean> {
  const { metrics, logger } = o;
  const registryHook = registryHookHandler(o.controller, o.secrets, o.registryHookSecret, metrics, logger, o.syncs, o.tenantSyncs);
  const syncHooks = o.syncs ? syncHttpHandler(o.syncs, o.secrets, metrics, logger) : undefined;
  // A NamespaceSync's webhook Secret is of its namespace (its key is namespace/name).
  const tenantSecrets = (key: string): SecretResolver => namespacedSecrets(o.secrets, syncRefOf(key).namespace ?? '');
  const tenantHooks = o.tenantSyncs ? syncHttpHandler(o.tenantSyncs, tenantSecrets, metrics, logger) : undefined;
  const gate = new MetricsGate(o.metricsAccess);
  const slots = new HookSlots();
  return async (req, res, path) => {
    if (path === '/metrics') {
      const refused = await gate.judge(req);
      if (refused) sendJson(res, refused.status, { error: refused.error });
      else await metrics.serve(res);
      return true;
    }
    if (path !== '/hooks' && !path.startsWith('/hooks/')) return false;
    let served = false;
    // /hooks/registry first: the Sync hooks would take it for a Sync named "registry".
    await slots.run(res, async () => {
      // A Sync's name has no slash: /hooks/<namespace>/<name> is a NamespaceSync's.
      const hooks = path.slice('/hooks/'.length).includes('/') ? tenantHooks : syncHooks;
      served = (await registryHook(req, res, path)) || (hooks !== undefined && (await hooks(req, res, path)));
    });
    return served || res.headersSent;
  };
}
