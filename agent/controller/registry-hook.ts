import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../hooks/http-json.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { serveRegistryHook, type RegistryHookFollower } from '../hooks/registry-hook.ts';
import { DeliveryLog } from '../hooks/git-webhook.ts';
import type { SecretKey, SecretResolver } from '../secrets/resolver.ts';
import type { SyncLoop } from './syncs/sync-loop.ts';
import { ociSourceFollows } from '../hooks/registry-match.ts';
import type { Controller } from './resources/controller.ts';

/** How answers, logs and metrics name the controller as a follower of registry notifications. */
const label = 'controller';

/**
 * `POST /hooks/registry` on the controller's `--listen` server: the same
 * senders and authentication as the standalone agent (agent/hooks/registry-hook.ts),
 * with the shared secret read from a Secret at each delivery
 * (`--registry-hook-secret`; a rotation needs no restart). The Image
 * objects of opted-in namespaces that follow the pushed tag are resolved
 * again at once (Controller.resolveAgain), and the Syncs whose `source.oci`
 * follows it run, tenants' NamespaceSyncs as the cluster's Syncs (a request
 * on the resource, as `kupenstack reconcile sync` makes: the leader runs it
 * whichever replica got the notification). The
 * answer gives counts only: nothing of any namespace to the sender.
 * Returns false for any other path.
 */
export function registryHookHandler(
  controller: Controller,
  secrets: SecretResolver,
  secret: SecretKey | undefined,
  metrics: AgentMetrics,
  logger: Logger,
  ...loops: Array<SyncLoop | undefined>
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
    let moved: string[] = [];
    let movedSyncs: Array<{ loop: SyncLoop; key: string }> = [];
    const follower: RegistryHookFollower = {
      name: label,
      secret: () => secrets.get(secret),
      moved: (pushes) => {
        moved = controller.imagesFollowing(pushes);
        movedSyncs = loops.flatMap((loop) => (loop ? loop.syncsFollowing((oci) => ociSourceFollows(oci, pushes)).map((key) => ({ loop, key })) : []));
        return moved.length > 0 || movedSyncs.length > 0;
      },
      trigger: async () => {
        await controller.resolveAgain(moved);
        for (const { loop, key } of movedSyncs) await loop.requestRun(key);
      },
    };
    const served = await serveRegistryHook(req, {
      followers: () => [follower],
      deliveries,
      metrics,
      logger,
      label,
      // The sender learns how many, never which: the Images live in tenants' namespaces (the log, for the operator, names them).
      moved: () => ({
        log: { images: moved, syncs: movedSyncs.map((s) => s.key) },
        body: { resolving: { images: moved.length, syncs: movedSyncs.length } },
      }),
    });
    return answer(res, served.status, served.body);
  };
}

function answer(res: ServerResponse, status: number, body: unknown): true {
  sendJson(res, status, body);
  return true;
}
