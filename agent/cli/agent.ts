import { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { secretsDirOf } from '../config/config.ts';
import { EnvFileSecretResolver } from '../secrets/env-file.ts';
import { isDuration, parseDuration } from '../util/duration.ts';
import { Agent } from '../standalone/agent.ts';
import { loggerFrom, withLogOptions, type LogOptions } from './log-options.ts';
import type { Logger } from '../telemetry/logger.ts';
import { AgentMetrics } from '../telemetry/metrics.ts';
import { AgentServer } from '../standalone/server.ts';
import { sourceForSync } from '../sync/sync-source.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { withCloudStepOptions } from './cloud-step.ts';
import { type CloudStepOptions } from '../standalone/revision-cloud.ts';
import { configureEgressFrom, withEgressOptions, type EgressOptions } from './egress-options.ts';
import { viewPlaceOf, withViewOptions, type ViewOptions } from './view-options.ts';
import { agentViewState } from '../standalone/view-state.ts';
import { sharedSchemaRegistry } from '../schema/registry.ts';
import { localBackend } from '../view/local-backend.ts';
import { serveView, type ViewPlace } from '../view/server.ts';
import { boundsFrom, configureBoundsFrom, withBoundsOptions, type BoundsOptions } from './bounds-options.ts';
import { configureGlanceFrom, withGlanceOptions, type GlanceOptions } from './glance-options.ts';

interface AgentCliOptions extends CloudOptions, CloudStepOptions, EgressOptions, LogOptions, ViewOptions, BoundsOptions, GlanceOptions {
  listen: string;
  metricsTokenFile?: string;
  metricsOpen?: boolean;
  once: boolean;
  shutdownGrace: string;
}

/**
 * `kupenstack agent --config kupenstack.yaml`: keep the cloud equal to every
 * Sync of the config, serve health, readiness, metrics and webhooks, and on
 * SIGTERM let the current step finish (or abandon it safely) before exiting.
 */
export function agentCommand(): Command {
  const command = withLogOptions(
    withViewOptions(
      withEgressOptions(
        withCloudStepOptions(
          withCloudOptions(
            new Command('agent').description(
              'run the GitOps loop: fetch each Sync of the config, validate, apply, correct drift; serve /healthz, /readyz, /metrics, /status and POST /hooks/<sync>',
            ),
          ),
        ),
        false,
      ),
      true,
    ),
    { format: 'json', shown: 'json' },
  );
  return withGlanceOptions(withBoundsOptions(command, "one Sync's run"))
    .option('--listen <host:port>', 'address of the HTTP server (health, metrics, webhooks)', '127.0.0.1:9090')
    .option(
      '--metrics-token-file <path>',
      '/metrics answers other hosts than loopback only with "Authorization: Bearer <token>", the token in this file (re-read on change)',
    )
    .option(
      '--metrics-open',
      'serve /metrics to anyone who reaches --listen (a NetworkPolicy of yours decides); default: loopback only, or --metrics-token-file',
    )
    .option('--once', 'run every Sync once and exit: 0 when all converged, 1 otherwise', false)
    .option('--shutdown-grace <duration>', 'on SIGTERM, how long the current run may go on before it is abandoned at a safe point', '25s')
    .action(runAgent);
}

/** The command's run: its options checked, the agent made from the config, then one pass (`--once`) or the server until a signal. */
async function runAgent(opts: AgentCliOptions): Promise<void> {
  if (!opts.config) throw new UsageError('kupenstack agent needs --config FILE (a kupenstack.yaml with a syncs: list)');
  const { config, cloud, cloudsFile } = resolveCloud(opts);
  if (!config.syncs?.length)
    throw new UsageError(`${opts.config}: no "syncs:" entries; add one, e.g. syncs: [{name: main, source: {git: {url: https://…, ref: {branch: main}}}}]`);
  if (!isDuration(opts.shutdownGrace)) throw new UsageError(`--shutdown-grace ${opts.shutdownGrace}: not a duration (e.g. 25s)`);
  const graceMs = parseDuration(opts.shutdownGrace);
  const listen = /^(.*):(\d+)$/.exec(opts.listen);
  if (!opts.once && !listen) throw new UsageError(`--listen ${opts.listen}: expected HOST:PORT, e.g. 127.0.0.1:9090`);
  const view = viewPlaceOf(opts, true);
  const bounds = boundsFrom(opts);

  const logger = loggerFrom(opts, process.stdout);
  // Standalone has no namespace labels: only rules for every namespace ("*=>…") apply.
  logger.info(configureEgressFrom(opts, () => ({})));
  // Standalone has no admin namespaces: every namespace's Flavors keep within the flavor bounds.
  logger.info(configureBoundsFrom(bounds));
  logger.info(configureGlanceFrom(opts));
  const metrics = new AgentMetrics();
  const secrets = new EnvFileSecretResolver({ secretsDir: secretsDirOf(config) });
  // With --kubeconfig, each revision's OpenStackCloud is driven before its resources (as apply --kubeconfig does).
  const cloudStep = opts.kubeconfig ? { kubeconfig: opts.kubeconfig, ...(opts.cloudNamespace ? { cloudNamespace: opts.cloudNamespace } : {}) } : undefined;
  const agent = await Agent.create({
    config,
    cloud,
    cloudsFile,
    logger,
    metrics,
    secrets,
    ...(cloudStep ? { cloudStep } : {}),
    createSource: (sync) => sourceForSync(sync, config, secrets),
  });
  if (opts.once) return runOnce(agent);
  if (view) await startAgentView(agent, view, config.stateDir, logger, opts.viewTokenFile);
  const metricsAccess = { ...(opts.metricsTokenFile !== undefined ? { tokenFile: opts.metricsTokenFile } : {}), open: opts.metricsOpen === true };
  await serve(new AgentServer(agent, metrics, logger, metricsAccess), agent, logger, listen!, graceMs);
}

/** `--view-address`: the web view over this agent's Syncs and state (agent/view/local-backend.ts). */
async function startAgentView(agent: Agent, place: ViewPlace, stateDir: string, logger: Logger, tokenFile?: string): Promise<void> {
  const v = await serveView({ ...place, backend: localBackend(agentViewState(agent, stateDir), sharedSchemaRegistry(), tokenFile), logger });
  const how = tokenFile ? `sign in with the token in ${tokenFile}` : 'no sign-in: loopback only';
  logger.info(
    { address: v.address.address, port: v.address.port },
    `serving the web view on http${place.tls ? 's' : ''}://${v.address.address}:${v.address.port}/ (${how})`,
  );
}

/** `--once`: every Sync once, each one's Ready on stderr; exit 0 when all converged. */
async function runOnce(agent: Agent): Promise<void> {
  const interrupted = new AbortController();
  const stop = (): void => interrupted.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const ok = await agent.once(interrupted.signal);
  await agent.stop(0);
  for (const h of agent.handles.values()) {
    const ready = h.runner.status.conditions.find((c) => c.type === 'Ready');
    process.stderr.write(`${h.sync.name}: ${ready?.status === 'True' ? 'ready' : 'not ready'} (${ready?.reason ?? '?'}): ${ready?.message ?? ''}\n`);
  }
  process.exitCode = ok ? 0 : 1;
}

/** The loop and its HTTP server until SIGTERM or SIGINT: the first lets the current step finish (within the grace), a second abandons it. */
async function serve(server: AgentServer, agent: Agent, logger: Logger, listen: RegExpExecArray, graceMs: number): Promise<void> {
  const [, host = '127.0.0.1', port = '9090'] = listen;
  const address = await server.listen(host.replace(/^\[|\]$/g, ''), Number(port));
  logger.info({ listen: `${address.address}:${address.port}`, syncs: [...agent.handles.keys()], version: process.env.npm_package_version }, 'agent started');
  agent.start();

  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: abandoning the current step now');
        agent.abort();
        return;
      }
      stopping = true;
      logger.info({ signal, graceMs }, 'shutting down: finishing the current step');
      void agent
        .stop(graceMs)
        .then(() => server.close())
        .then(() => {
          logger.info('stopped');
          resolve();
        });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
