import type { IncomingMessage, ServerResponse } from 'node:http';
import { KupenstackError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';
import { readBody, sendJson } from '../hooks/http-json.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { DeliveryLog, identify, parsePush, refMatches, verify, WebhookError } from '../hooks/git-webhook.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { SyncLoop } from './sync-loop.ts';


/**
 * The controller's HTTP extras beside the probes: `/metrics` (Prometheus, the
 * agent's series) and `POST /hooks/<sync>` (GitHub, Gitea or GitLab push,
 * verified by agent/hooks/git-webhook.ts with the Sync's webhook Secret). A
 * verified push is recorded on the Sync resource, so the leader runs it
 * whichever replica the Service sent the delivery to. Returns false for
 * any other path.
 */
export function syncHttpHandler(loop: SyncLoop, secrets: SecretResolver, metrics: AgentMetrics, logger: Logger): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean> {
  const deliveries = new DeliveryLog(1000);
  return async (req, res, path) => {
    if (path === '/metrics') {
      const text = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType });
      res.end(text);
      return true;
    }
    if (!path.startsWith('/hooks/')) return false;
    const name = decodeURIComponent(path.slice('/hooks/'.length));
    if (req.method !== 'POST') return answer(res, 405, { error: 'webhooks are POSTed' });
    let provider = 'unknown';
    try {
      const body = await readBody(req);
      const delivery = identify(req.headers, body);
      provider = delivery.provider;
      const sync = loop.syncConfig(name);
      if (!sync) throw new WebhookError(404, `no runnable Sync named "${name}" (kubectl get sync ${name})`);
      if (!sync.webhook) throw new WebhookError(403, `Sync ${name} has no webhook secret: set spec.webhook.secretRef`);
      // Read on every delivery: a rotated Secret needs no restart. Errors name the Secret, never a value.
      verify(delivery, req.headers, body, await secrets.get(sync.webhook.secret));
      if (!deliveries.remember(`${name}:${delivery.provider}:${delivery.id}`)) {
        metrics.webhooks.inc({ sync: name, provider, result: 'replayed' });
        return answer(res, 200, { result: 'replayed', message: `delivery ${delivery.id} was already received; ignored` });
      }
      const push = parsePush(delivery, body);
      if (!push || (sync.source.git && !refMatches(push.ref, sync.source.git.ref))) {
        metrics.webhooks.inc({ sync: name, provider, result: 'ignored' });
        return answer(res, 200, { result: 'ignored', message: push ? `${push.ref} is not followed by ${name}` : `event "${delivery.event}" is not a push` });
      }
      await loop.requestRun(name);
      metrics.webhooks.inc({ sync: name, provider, result: 'triggered' });
      logger.info({ sync: name, provider, delivery: delivery.id, ref: push.ref, after: push.after }, 'webhook: push received, fetching now');
      return answer(res, 202, { result: 'triggered', syncs: [name] });
    } catch (err) {
      if (!(err instanceof KupenstackError)) throw err;
      const status = err instanceof WebhookError ? err.status : 500;
      metrics.webhooks.inc({ sync: name, provider, result: 'rejected' });
      logger.warn({ sync: name, status, error: err.message }, 'webhook rejected');
      return answer(res, status, { error: err.message });
    }
  };
}

/** Answers and tells the server the request was this handler's. */
function answer(res: ServerResponse, status: number, body: unknown): true {
  sendJson(res, status, body);
  return true;
}
