import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretNotFoundError } from '../secrets/env-file.ts';
import type { Agent, SyncHandle } from './agent.ts';
import { sendJson } from '../hooks/http-json.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { MetricsGate, type MetricsAccess } from '../telemetry/metrics-access.ts';
import { serveRegistryHook, type RegistryHookFollower } from '../hooks/registry-hook.ts';
import { ociSourceFollows } from '../hooks/registry-match.ts';
import { DeliveryLog } from '../hooks/git-webhook.ts';
import { HookSlots } from '../hooks/in-flight.ts';
import { handleGitHook, type GitHookFollower, type GitHookOptions } from '../hooks/git-hook.ts';

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
  private readonly slots = new HookSlots();

  private readonly agent: Agent;
  private readonly metrics: AgentMetrics;
  private readonly logger: Logger;
  private readonly gitHook: GitHookOptions;

  /** Who may read /metrics (telemetry/metrics-access.ts): loopback only unless told otherwise. */
  private readonly metricsGate: MetricsGate;

  constructor(agent: Agent, metrics: AgentMetrics, logger: Logger, metricsAccess: MetricsAccess = {}) {
    this.metricsGate = new MetricsGate(metricsAccess);
    this.agent = agent;
    this.metrics = metrics;
    this.logger = logger;
    const follower = (h: SyncHandle): GitHookFollower => ({
      name: h.sync.name,
      ...(h.sync.source.git ? { git: h.sync.source.git } : {}),
      hasSecret: h.sync.webhook !== undefined,
      secret: () => this.webhookSecret(h),
      trigger: () => void h.scheduler.trigger('webhook'),
    });
    this.gitHook = {
      byName: (name) => {
        const h = agent.handles.get(name);
        return h && follower(h);
      },
      all: () => [...agent.handles.values()].map(follower),
      deliveries: this.deliveries,
      metrics,
      logger,
      advice: { unknown: (name) => `no Sync named "${name}"`, noSecret: 'configured (webhook: {secretEnv|secretFile})' },
    };
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        // The path only: a query (a refused ?token=) must never reach a log.
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
      if (err instanceof SecretNotFoundError)
        throw new SecretNotFoundError(err.ref, err.problem, `Sync ${h.sync.name} webhook secret: ${err.message}`, { cause: err });
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
      const refused = await this.metricsGate.judge(req);
      return refused ? sendJson(res, refused.status, { error: refused.error }) : this.metrics.serve(res);
    }
    if (path === '/status')
      return sendJson(res, 200, {
        syncs: [...this.agent.handles.values()].map((h) => ({ ...h.runner.status, lastGoodDir: undefined, nextRunAt: h.scheduler.nextRunAt?.toISOString() })),
      });
    if (path === '/hooks' || path.startsWith('/hooks/')) return this.slots.run(res, () => this.hook(req, res, path));
    sendJson(res, 404, { error: `no such endpoint ${path}; try /healthz, /readyz, /metrics, /status, POST /hooks/<sync>, POST /hooks/registry` });
  }

  /** `POST /hooks…`, in one of the slots (hooks/in-flight.ts). */
  private async hook(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (path === '/hooks/registry' || path.startsWith('/hooks/registry/')) {
      if (req.method !== 'POST') return sendJson(res, 405, { error: 'registry notifications are POSTed' });
      return this.registryHook(req, res, path === '/hooks/registry' ? undefined : decodeURIComponent(path.slice('/hooks/registry/'.length)));
    }
    if (req.method !== 'POST') return sendJson(res, 405, { error: 'webhooks are POSTed' });
    const answer = await handleGitHook(req, path === '/hooks' ? undefined : decodeURIComponent(path.slice('/hooks/'.length)), this.gitHook);
    return sendJson(res, answer.status, answer.body);
  }

  /** A registry says a tag moved: the Syncs whose Images follow it (and whose secret the sender knows) run now. */
  private async registryHook(req: IncomingMessage, res: ServerResponse, name: string | undefined): Promise<void> {
    const followers = (): RegistryHookFollower[] | { unknown: string } => {
      const handles = [...this.agent.handles.values()].filter((h) => name === undefined || h.sync.name === name);
      return name !== undefined && handles.length === 0 ? { unknown: `no Sync named "${name}"` } : handles.map((h) => this.registryFollower(h));
    };
    const answer = await serveRegistryHook(req, { followers, deliveries: this.deliveries, metrics: this.metrics, logger: this.logger, label: name ?? '*' });
    return sendJson(res, answer.status, answer.body);
  }

  private registryFollower(h: SyncHandle): RegistryHookFollower {
    let sourceMoved = false;
    return {
      name: h.sync.name,
      secret: async () => (h.sync.webhook ? this.webhookSecret(h) : undefined),
      moved: (pushes) => {
        const oci = h.sync.source.oci;
        sourceMoved = oci !== undefined && ociSourceFollows(oci, pushes);
        const addresses = h.runner.imagesFollowing(pushes);
        // The run the trigger starts resolves and applies exactly these (sync-runner.ts); the rest waits for the interval.
        h.runner.noteMoved(addresses);
        return sourceMoved || addresses.length > 0;
      },
      // The Sync's own artifact moved: a new revision, so a whole run (fetch, apply, prune) as for a Git push.
      trigger: () => void h.scheduler.trigger(sourceMoved ? 'webhook' : 'registry'),
    };
  }
}
