import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KupenstackError } from '../errors.ts';
import { SecretNotFoundError } from '../secrets/env-file.ts';
import type { Agent, SyncHandle } from './agent.ts';
import { readBody, sendJson } from '../hooks/http-json.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { markMoved } from '../kinds/image/oci-follow.ts';
import { handleRegistryHook, type RegistryHookFollower } from '../hooks/registry-hook.ts';
import { DeliveryLog, identify, normalizeRepoUrl, parsePush, refMatches, verify, WebhookError } from '../hooks/git-webhook.ts';


/**
 * The agent's HTTP side: `/healthz` (the process answers), `/readyz` (every
 * Sync reconciled once since start, or why not), `/metrics` (Prometheus),
 * `/status` (every Sync's status as JSON), the push receivers
 * `POST /hooks/<sync>` and `POST /hooks` (matched by repository URL and ref),
 * and registry notifications `POST /hooks/registry[/<sync>]` (registry-hook.ts).
 */
export class AgentServer {
  private readonly server: Server;
  private readonly deliveries = new DeliveryLog(1000);

  private readonly agent: Agent;
  private readonly metrics: AgentMetrics;
  private readonly logger: Logger;

  constructor(agent: Agent, metrics: AgentMetrics, logger: Logger) {
    this.agent = agent;
    this.metrics = metrics;
    this.logger = logger;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        // The path only: a registry hook's ?token= must never reach a log.
        this.logger.error({ error: err instanceof Error ? err.message : String(err), path: (req.url ?? '').split('?')[0] }, 'http handler failed');
        if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
        else res.end();
      });
    });
  }

  async listen(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    return this.server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Read on every delivery: a rotated secret needs no restart. The error names the reference, never a value. */
  private async webhookSecret(h: SyncHandle): Promise<string> {
    try {
      return await this.agent.secrets.get(h.sync.webhook!.secret);
    } catch (err) {
      if (err instanceof SecretNotFoundError) throw new SecretNotFoundError(err.ref, err.problem, `Sync ${h.sync.name} webhook secret: ${err.message}`, { cause: err });
      throw err;
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://agent');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz') {
      const r = this.agent.readiness();
      return sendJson(res, r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not ready', syncs: r.syncs });
    }
    if (path === '/metrics') {
      const text = await this.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': this.metrics.registry.contentType });
      res.end(text);
      return;
    }
    if (path === '/status') return sendJson(res, 200, { syncs: [...this.agent.handles.values()].map((h) => ({ ...h.runner.status, lastGoodDir: undefined, nextRunAt: h.scheduler.nextRunAt?.toISOString() })) });
    if (path === '/hooks/registry' || path.startsWith('/hooks/registry/')) {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'registry notifications are POSTed' });
      return this.registryHook(req, res, url.searchParams, path === '/hooks/registry' ? undefined : decodeURIComponent(path.slice('/hooks/registry/'.length)));
    }
    if (path === '/hooks' || path.startsWith('/hooks/')) {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'webhooks are POSTed' });
      return this.hook(req, res, path === '/hooks' ? undefined : decodeURIComponent(path.slice('/hooks/'.length)));
    }
    sendJson(res, 404, { error: `no such endpoint ${path}; try /healthz, /readyz, /metrics, /status, POST /hooks/<sync>, POST /hooks/registry` });
  }

  private async hook(req: IncomingMessage, res: ServerResponse, name: string | undefined): Promise<void> {
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (err) {
      return sendJson(res, err instanceof WebhookError ? err.status : 400, { error: (err as Error).message });
    }
    const label = name ?? '*';
    try {
      const delivery = identify(req.headers, body);
      let candidates: SyncHandle[];
      if (name !== undefined) {
        const h = this.agent.handles.get(name);
        if (!h) throw new WebhookError(404, `no Sync named "${name}"`);
        candidates = [h];
      } else {
        // Not yet authenticated: the payload only narrows down whose secret to try.
        const push = parsePush(delivery, body);
        const urls = new Set((push?.repoUrls ?? []).map(normalizeRepoUrl));
        candidates = [...this.agent.handles.values()].filter((h) => h.sync.source.git && urls.has(normalizeRepoUrl(h.sync.source.git.url)));
        if (candidates.length === 0) throw new WebhookError(404, 'no Sync follows the repository named in this payload');
      }
      const verified: SyncHandle[] = [];
      for (const h of candidates) {
        if (!h.sync.webhook) continue;
        try {
          verify(delivery, req.headers, body, await this.webhookSecret(h));
          verified.push(h);
        } catch (err) {
          if (!(err instanceof WebhookError)) throw err;
        }
      }
      if (verified.length === 0) {
        if (candidates.every((h) => !h.sync.webhook)) throw new WebhookError(403, `Sync ${candidates.map((h) => h.sync.name).join(', ')} has no webhook secret configured (webhook: {secretEnv|secretFile})`);
        // The precise reason, from the first candidate, without revealing anything about the secret.
        try {
          const h = candidates.find((c) => c.sync.webhook)!;
          verify(delivery, req.headers, body, await this.webhookSecret(h));
        } catch (err) {
          if (err instanceof WebhookError) throw err;
        }
        throw new WebhookError(401, 'the signature does not verify');
      }
      // Remembered only once authentic, so forged deliveries cannot burn ids.
      if (!this.deliveries.remember(`${name ?? ''}:${delivery.provider}:${delivery.id}`)) {
        this.count(verified, delivery.provider, 'replayed');
        this.logger.info({ provider: delivery.provider, delivery: delivery.id, syncs: verified.map((h) => h.sync.name) }, 'webhook: replayed delivery ignored');
        return sendJson(res, 200, { result: 'replayed', message: `delivery ${delivery.id} was already received; ignored` });
      }
      const push = parsePush(delivery, body);
      if (!push) {
        this.count(verified, delivery.provider, 'ignored');
        return sendJson(res, 200, { result: 'ignored', message: `event "${delivery.event}" is not a push` });
      }
      const moved = verified.filter((h) => !h.sync.source.git || refMatches(push.ref, h.sync.source.git.ref));
      this.count(verified.filter((h) => !moved.includes(h)), delivery.provider, 'ignored');
      if (moved.length === 0) return sendJson(res, 200, { result: 'ignored', message: `${push.ref} is not followed by ${verified.map((h) => h.sync.name).join(', ')}` });
      for (const h of moved) h.scheduler.trigger('webhook');
      this.count(moved, delivery.provider, 'triggered');
      this.logger.info({ provider: delivery.provider, delivery: delivery.id, ref: push.ref, after: push.after, syncs: moved.map((h) => h.sync.name) }, 'webhook: push received, fetching now');
      return sendJson(res, 202, { result: 'triggered', syncs: moved.map((h) => h.sync.name) });
    } catch (err) {
      if (!(err instanceof WebhookError) && !(err instanceof KupenstackError)) throw err;
      const status = err instanceof WebhookError ? err.status : 500;
      this.metrics.webhooks.inc({ sync: label, provider: 'unknown', result: 'rejected' });
      this.logger.warn({ sync: label, status, error: err.message }, 'webhook rejected');
      return sendJson(res, status, { error: err.message });
    }
  }

  /** A registry says a tag moved: the Syncs whose Images follow it (and whose secret the sender knows) run now. */
  private async registryHook(req: IncomingMessage, res: ServerResponse, query: URLSearchParams, name: string | undefined): Promise<void> {
    let body: Buffer;
    try {
      body = await readBody(req);
    } catch (err) {
      return sendJson(res, err instanceof WebhookError ? err.status : 400, { error: (err as Error).message });
    }
    let handles = [...this.agent.handles.values()];
    if (name !== undefined) {
      handles = handles.filter((h) => h.sync.name === name);
      if (handles.length === 0) return sendJson(res, 404, { error: `no Sync named "${name}"` });
    }
    const followers: RegistryHookFollower[] = handles.map((h) => ({
      name: h.sync.name,
      secret: async () => (h.sync.webhook ? this.webhookSecret(h) : undefined),
      moved: (pushes) => {
        const addresses = markMoved(h.sync.owner, pushes);
        // The run the trigger starts applies exactly these (sync-runner.ts); the rest waits for the interval.
        h.runner.noteMoved(addresses);
        return addresses.length > 0;
      },
      trigger: () => void h.scheduler.trigger('registry'),
    }));
    let answer;
    try {
      answer = await handleRegistryHook({ body, headers: req.headers, query }, followers, this.deliveries);
    } catch (err) {
      if (!(err instanceof KupenstackError)) throw err;
      // A secret that cannot be read: the operator's problem, named without any value.
      this.logger.warn({ error: err.message }, 'registry notification rejected');
      return sendJson(res, 500, { error: err.message });
    }
    const sender = answer.sender ?? 'unknown';
    const counted = answer.triggered.length > 0 ? answer.triggered : [name ?? '*'];
    for (const sync of counted) this.metrics.webhooks.inc({ sync, provider: `registry-${sender}`, result: answer.result });
    const pushes = answer.pushes.map((p) => `${p.host ? `${p.host}/` : ''}${p.repository}:${p.tag}${p.digest ? `@${p.digest}` : ''}`);
    if (answer.result === 'rejected') this.logger.warn({ sender, status: answer.status, error: answer.body.error }, 'registry notification rejected');
    else if (answer.result === 'triggered') this.logger.info({ sender, pushes, syncs: answer.triggered }, 'registry notification: tag moved, resolving now');
    else this.logger.info({ sender, pushes, result: answer.result, message: answer.body.message }, 'registry notification ignored');
    return sendJson(res, answer.status, answer.body);
  }

  private count(handles: SyncHandle[], provider: string, result: string): void {
    for (const h of handles) this.metrics.webhooks.inc({ sync: h.sync.name, provider, result });
  }
}


