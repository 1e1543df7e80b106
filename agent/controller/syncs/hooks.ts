import type { IncomingMessage, ServerResponse } from 'node:http';
import { DeliveryLog } from '../../hooks/git-webhook.ts';
import { handleGitHook, type GitHookOptions } from '../../hooks/git-hook.ts';
import { sendJson } from '../../hooks/http-json.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { AgentMetrics } from '../../telemetry/metrics.ts';
import type { SecretResolver } from '../../secrets/resolver.ts';
import type { SyncLoop } from './sync-loop.ts';

/**
 * The controller's `POST /hooks/<sync>` (GitHub, Gitea or GitLab push,
 * verified by agent/hooks/git-hook.ts with the Sync's webhook Secret). A
 * verified push is recorded on the Sync resource, so the leader runs it
 * whichever replica the Service sent the delivery to. Returns false for
 * any other path.
 */
export function syncHttpHandler(
  loop: SyncLoop,
  /** Where the webhook Secret is read: the controller's namespace, or per Sync (a NamespaceSync's own namespace). */
  secrets: SecretResolver | ((name: string) => SecretResolver),
  metrics: AgentMetrics,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean> {
  const hook: GitHookOptions = {
    byName: (name) => {
      const sync = loop.syncConfig(name);
      if (!sync) return undefined;
      const webhook = sync.webhook;
      return {
        name,
        ...(sync.source.git ? { git: sync.source.git } : {}),
        hasSecret: webhook !== undefined,
        // Read on every delivery: a rotated Secret needs no restart. Errors name the Secret, never a value.
        secret: () => (typeof secrets === 'function' ? secrets(name) : secrets).get(webhook!.secret),
        trigger: () => loop.requestRun(name),
      };
    },
    // The cluster's hooks name their Sync: no delivery is matched by repository.
    all: () => [],
    deliveries: new DeliveryLog(1000),
    metrics,
    logger,
    advice: { unknown: (name) => `no runnable Sync named "${name}" (kubectl get sync ${name})`, noSecret: ': set spec.webhook.secretRef' },
  };
  return async (req, res, path) => {
    if (!path.startsWith('/hooks/')) return false;
    if (req.method !== 'POST') {
      sendJson(res, 405, { error: 'webhooks are POSTed' });
      return true;
    }
    let name: string;
    try {
      name = decodeURIComponent(path.slice('/hooks/'.length));
    } catch {
      sendJson(res, 400, { error: 'the Sync name in the URL is not valid percent-encoding' });
      return true;
    }
    const answer = await handleGitHook(req, name, hook);
    sendJson(res, answer.status, answer.body);
    return true;
  };
}
