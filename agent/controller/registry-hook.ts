import type { IncomingMessage, ServerResponse } from 'node:http';
import { KupenstackError } from '../errors.ts';
import { readBody, sendJson } from '../hooks/http-json.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { handleRegistryHook } from '../hooks/registry-hook.ts';
import { DeliveryLog, WebhookError } from '../hooks/git-webhook.ts';
import type { SecretKey, SecretResolver } from '../secrets/resolver.ts';
import type { SyncLoop } from './syncs/sync-loop.ts';
import { ociSourceFollows } from '../kinds/image/oci-follow.ts';
import type { Controller } from './resources/controller.ts';

/** How answers, logs and metrics name the controller as a follower of registry notifications. */
const follower = 'controller';

/**
 * `POST /hooks/registry` on the controller's `--listen` server: the same
 * senders and authentication as the standalone agent (agent/hooks/registry-hook.ts),
 * with the shared secret read from a Secret at each delivery
 * (`--registry-hook-secret`; a rotation needs no restart). The Image
 * objects of opted-in namespaces that follow the pushed tag are resolved
 * again at once (Controller.resolveAgain), and the Syncs whose `source.oci`
 * follows it run (a request on the resource, as `kupenstack reconcile sync`
 * makes: the leader runs it whichever replica got the notification).
 * Returns false for any other path.
 */
export function registryHookHandler(
  controller: Controller,
  secrets: SecretResolver,
  secret: SecretKey | undefined,
  metrics: AgentMetrics,
  logger: Logger,
  syncs?: SyncLoop,
): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean> {
  const deliveries = new DeliveryLog(1000);
  return async (req, res, path) => {
    if (path !== '/hooks/registry') return false;
    if (req.method !== 'POST') return answer(res, 405, { error: 'registry notifications are POSTed' });
    if (!secret)
      return answer(res, 403, {
        error:
          'registry notifications are refused: the controller has no shared secret for them; start it with --registry-hook-secret [namespace/]name[:key] (chart: registryHook.secretName)',
      });
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (err) {
      return answer(res, err instanceof WebhookError ? err.status : 400, { error: (err as Error).message });
    }
    let moved: string[] = [];
    let movedSyncs: string[] = [];
    const query = new URL(req.url ?? '/', 'http://controller').searchParams;
    let result;
    try {
      result = await handleRegistryHook(
        { body, headers: req.headers, query },
        [
          {
            name: follower,
            secret: () => secrets.get(secret),
            moved: (pushes) => {
              moved = controller.imagesFollowing(pushes);
              movedSyncs = syncs?.syncsFollowing((oci) => ociSourceFollows(oci, pushes)) ?? [];
              return moved.length > 0 || movedSyncs.length > 0;
            },
            trigger: () => undefined,
          },
        ],
        deliveries,
      );
    } catch (err) {
      if (!(err instanceof KupenstackError)) throw err;
      // A Secret that cannot be read: the operator's problem, named without any value.
      logger.warn({ error: err.message }, 'registry notification rejected');
      return answer(res, 500, { error: err.message });
    }
    if (result.result === 'triggered') {
      await controller.resolveAgain(moved);
      for (const name of movedSyncs) await syncs?.requestRun(name);
    }
    const sender = result.sender ?? 'unknown';
    metrics.webhooks.inc({ sync: follower, provider: `registry-${sender}`, result: result.result });
    const pushes = result.pushes.map((p) => `${p.host ? `${p.host}/` : ''}${p.repository}:${p.tag}${p.digest ? `@${p.digest}` : ''}`);
    if (result.result === 'rejected') logger.warn({ sender, status: result.status, error: result.body.error }, 'registry notification rejected');
    else if (result.result === 'triggered') logger.info({ sender, pushes, images: moved, syncs: movedSyncs }, 'registry notification: tag moved, resolving now');
    else logger.info({ sender, pushes, result: result.result, message: result.body.message }, 'registry notification ignored');
    return answer(res, result.status, result.result === 'triggered' ? { ...result.body, images: moved, ...(movedSyncs.length > 0 ? { ociSyncs: movedSyncs } : {}) } : result.body);
  };
}

function answer(res: ServerResponse, status: number, body: unknown): true {
  sendJson(res, status, body);
  return true;
}
