import { Command } from 'commander';
import { runController, type ControllerSettings } from '../controller/process.ts';
import { chooseLoops } from '../controller/loops.ts';
import { checkShardName, parseShards, preferredShard } from '../controller/leases/shards.ts';
import { loadConfig } from '../sync/config-file.ts';
import { cloudName as cloudNameOf } from './cloud-options.ts';
import { UsageError } from '../errors.ts';
import { isDuration, parseDuration } from '../util/duration.ts';
import { configureEgressFrom, withEgressOptions, type EgressOptions } from './egress-options.ts';
import { viewPlaceOf, withViewOptions, type ViewOptions } from './view-options.ts';
import { configureAgentCredentials, describeAgentCredentials } from '../net/registry-credentials.ts';
import { loggerFrom, withLogOptions, type LogOptions } from './log-options.ts';
import { markLogged } from './logged-error.ts';
import { boundsFrom, configureBoundsFrom, runDeadlineOf, withBoundsOptions, type BoundsOptions } from './bounds-options.ts';
import { configureGlanceFrom, withGlanceOptions, type GlanceOptions } from './glance-options.ts';
import { defaultLogFormat, type Logger } from '../telemetry/logger.ts';
import { tenantLockdownFrom, withTenantSyncOptions, type TenantSyncOptions } from './tenant-sync-options.ts';

interface ControllerCliOptions extends EgressOptions, LogOptions, ViewOptions, BoundsOptions, TenantSyncOptions, GlanceOptions {
  kubeconfig?: string;
  namespace: string[];
  namespaceWorkers?: string;
  cloud?: string;
  clouds?: string;
  cloudsSecret?: string;
  config?: string;
  owner?: string;
  projectPrefix?: string;
  resync: string;
  optInLabel: string;
  debounce: string;
  leaderElect?: boolean;
  leaderElectionId: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  shards?: string;
  defaultShard: string;
  preferredShard?: string;
  shardGrace?: string;
  listen?: string;
  apiStaleAfter: string;
  syncSelector?: string;
  syncs: boolean;
  stateDir?: string;
  registryHookSecret?: string;
  metricsTokenFile?: string;
  metricsOpen?: boolean;
  cloudLifecycle: boolean;
  cloudResync: string;
  cloudSelector?: string;
  flavorExtraSpec: string[];
  agentCredentialsRegistry: string[];
}

/**
 * `kupenstack controller`: the in-cluster loops. The Sync loop applies each
 * Sync resource's Git repository as custom resources, impersonating the
 * Sync's ServiceAccount; the resource loop keeps the custom resources of
 * every namespace that opts in equal in OpenStack (namespace = project),
 * with status, Events and finalizers on the CRs. The flags (withControllerFlags)
 * are checked (settingsOf) and handed to runController (controller/process.ts).
 */
export function controllerCommand(): Command {
  const command = withLogOptions(withViewOptions(withEgressOptions(new Command('controller'), true)), {
    format: defaultLogFormat(process.stderr),
    shown: 'json, text when stderr is a terminal',
  });
  return withBoundsOptions(withTenantSyncOptions(withControllerFlags(command)), "one namespace's run").action(async (opts: ControllerCliOptions) => {
    const settings = settingsOf(opts);
    const tenantSyncs = tenantLockdownFrom(opts);
    const bounds = boundsFrom(opts);
    await runLogged(opts, (logger) =>
      runController({
        ...settings,
        ...(tenantSyncs ? { tenantSyncs } : {}),
        logger,
        egress: (labelsOf) => configureEgressFrom(opts, labelsOf),
        bounds: (exempt) => `${configureBoundsFrom(bounds, exempt)}; ${configureGlanceFrom(opts)}`,
        runDeadline: runDeadlineOf(bounds),
        registryCredentials: (isAdmin) => {
          const policy = { isAdmin, registries: opts.agentCredentialsRegistry };
          configureAgentCredentials(policy);
          return describeAgentCredentials(policy);
        },
      }),
    );
  });
}

/** The command's own flags, one `.option` each (the log and egress flags are shared with `kupenstack agent`). */
function withControllerFlags(command: Command): Command {
  return withGlanceOptions(command)
    .description(
      'reconcile KupenStack custom resources in opted-in namespaces (label kupenstack.io/project=enabled) into OpenStack; status, Events and finalizers on the objects',
    )
    .option('--kubeconfig <file>', 'kubeconfig to use (default: $KUBECONFIG, else the in-cluster service account)')
    .option('--namespace <name>', 'reconcile this namespace even without the label (repeatable)', (v: string, all: string[]) => [...all, v], [])
    .option('--cloud <name>', 'clouds.yaml entry of the cloud (default: $OS_CLOUD, else "cloud" in the config file)')
    .option('--clouds <file>', 'clouds.yaml file (when the cloud is not read from a Secret)')
    .option('--clouds-secret <[namespace/]name>', 'read clouds.yaml from this Secret (key clouds.yaml); changes apply without a restart')
    .option('-c, --config <file>', 'kupenstack.yaml (owner, projectPrefix, role, concurrency)')
    .option('--owner <name>', 'ownership identity written into every object (overrides the config)')
    .option('--project-prefix <prefix>', 'Keystone project name = prefix + namespace (overrides the config)')
    .option('--opt-in-label <key=value>', 'the namespace label that opts a namespace in', 'kupenstack.io/project=enabled')
    .option('--resync <duration>', 'drift correction and self-heal interval per namespace', '5m')
    .option(
      '--debounce <duration>',
      'changes within this window after a run started (the rest of one kubectl apply -f dir/) collapse into one more run',
      '100ms',
    )
    .option(
      '--namespace-workers <n>',
      "namespaces reconciled at once (default: the config's concurrency, at most 4); a namespace whose objects OpenStack is still making frees its worker and runs again when they are due",
    )
    .option('--leader-elect', "run several replicas: only the holder of a Lease in the controller's namespace acts")
    .option('--leader-election-id <name>', 'name of that Lease (the create journal is the ConfigMap <name>-creates beside it)', 'kupenstack-controller')
    .option('--lease-duration <duration>', 'others take the Lease over once it was not renewed for this long', '15s')
    .option('--renew-deadline <duration>', 'the leader stops acting once it could not renew for this long', '10s')
    .option('--retry-period <duration>', 'how often candidates try and the leader renews', '2s')
    .option(
      '--shards <a,b,c>',
      'sharding: serve the namespaces of these shards (namespace label kupenstack.io/shard), ' +
        'acting on a shard only while holding its Lease <leader-election-id>-shard-<name> (replaces --leader-elect)',
    )
    .option('--default-shard <name>', 'the shard of a namespace without the label kupenstack.io/shard', 'default')
    .option(
      '--preferred-shard <name>',
      'the shard this replica claims first (default: the ordinal of a StatefulSet pod name, modulo the shards); ' +
        'it takes other shards only once their Lease expired, and gets its own back from a replica that does not prefer it',
    )
    .option(
      '--shard-grace <duration>',
      'how long after start a replica leaves the shards it does not prefer to their preferred replicas (default: --lease-duration)',
    )
    .option(
      '--api-stale-after <duration>',
      '/healthz fails (and the kubelet restarts the container) once the API server has not answered this replica for this long: revoked credentials, a deleted RBAC binding, a wedged connection',
      '60s',
    )
    .option(
      '--listen <host:port>',
      'serve /healthz and /readyz (probes), /metrics, POST /hooks/<sync> (Git push webhooks) and POST /hooks/registry (registry notifications) on this address',
    )
    .option(
      '--registry-hook-secret <[namespace/]name[:key]>',
      'the Secret (key token unless given) holding the shared secret of registry notifications on POST /hooks/registry; without it they are refused',
    )
    .option(
      '--metrics-token-file <path>',
      '/metrics answers other hosts than loopback only with "Authorization: Bearer <token>", the token in this file (re-read on change); without it and without --metrics-open, loopback only',
    )
    .option(
      '--metrics-open',
      'serve /metrics to anyone who reaches --listen (a NetworkPolicy of yours decides); default: loopback only, or --metrics-token-file',
    )
    .option('--sync-selector <selector>', 'run only the Sync resources matching this label selector (default: every Sync)')
    .option('--no-syncs', 'do not run Sync resources (Git → custom resources); only the resource loop')
    .option(
      '--no-cloud-lifecycle',
      'do not drive OpenStackCloud resources (install and upgrade of the OpenStack-Helm charts); only OpenStack resources and Syncs',
    )
    .option('--cloud-resync <duration>', 'a Ready OpenStackCloud is driven again this often (drift in its namespace corrected)', '10m')
    .option('--cloud-selector <selector>', "drive only the OpenStackCloud resources matching this label selector (default: the cluster's one)")
    .option(
      '--flavor-extra-spec <key>',
      'a Flavor extra spec key tenants may set; every other extra spec (and every other admin-only field, README: Admin-only fields) ' +
        'is for namespaces labelled kupenstack.io/admin=true only; repeatable',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option(
      '--agent-credentials-registry <host[:port]>',
      "a registry (as Images name it: docker.io, registry.example:5000) whose pulls may use the controller's own credentials (its docker config) " +
        'from any namespace; elsewhere only admin namespaces use them, and a tenant Image without credentialsSecretRef pulls anonymously; repeatable',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('--state-dir <dir>', 'where Sync resources keep their Git cache (overrides stateDir of the config; a writable volume in a pod)');
}

/** The flags checked (a UsageError names the flag and an example) and turned into the process's settings. */
function settingsOf(opts: ControllerCliOptions): Omit<ControllerSettings, 'logger' | 'egress' | 'bounds' | 'registryCredentials'> {
  const config = loadConfig(opts.config);
  if (opts.owner) config.owner = opts.owner;
  if (opts.projectPrefix !== undefined) config.projectPrefix = opts.projectPrefix;
  if (opts.stateDir !== undefined) config.stateDir = opts.stateDir;
  const cloudName = cloudNameOf(opts.cloud, config.cloud);
  const loops = chooseLoops({ ...(cloudName ? { cloudName } : {}), syncs: opts.syncs, cloudLifecycle: opts.cloudLifecycle });
  if (!isDuration(opts.resync)) throw new UsageError(`--resync ${opts.resync}: not a duration (e.g. 5m)`);
  if (!isDuration(opts.cloudResync)) throw new UsageError(`--cloud-resync ${opts.cloudResync}: not a duration (e.g. 10m)`);
  if (!isDuration(opts.apiStaleAfter) || parseDuration(opts.apiStaleAfter) < 5_000)
    throw new UsageError(`--api-stale-after ${opts.apiStaleAfter}: expected a duration of at least 5s (e.g. 60s)`);
  if (!isDuration(opts.debounce)) throw new UsageError(`--debounce ${opts.debounce}: not a duration (e.g. 200ms)`);
  for (const [flag, value] of [
    ['--lease-duration', opts.leaseDuration],
    ['--renew-deadline', opts.renewDeadline],
    ['--retry-period', opts.retryPeriod],
  ] as const) {
    if (!isDuration(value)) throw new UsageError(`${flag} ${value}: not a duration (e.g. 15s)`);
  }
  const listen = opts.listen === undefined ? undefined : /^(.*):(\d+)$/.exec(opts.listen);
  if (listen === null) throw new UsageError(`--listen ${opts.listen}: expected HOST:PORT, e.g. 127.0.0.1:9090`);
  const hookSecret = opts.registryHookSecret === undefined ? undefined : /^(?:([^/:]+)\/)?([^/:]+)(?::(.+))?$/.exec(opts.registryHookSecret);
  if (hookSecret === null)
    throw new UsageError(`--registry-hook-secret ${opts.registryHookSecret}: expected [namespace/]name[:key], e.g. kupenstack-system/registry-hook:token`);
  const workers = opts.namespaceWorkers === undefined ? undefined : Number(opts.namespaceWorkers);
  if (workers !== undefined && (!Number.isInteger(workers) || workers < 1 || workers > 64))
    throw new UsageError(`--namespace-workers ${opts.namespaceWorkers}: expected an integer from 1 to 64`);
  const resyncMs = parseDuration(opts.resync);
  const debounceMs = parseDuration(opts.debounce);
  const label = /^([^=]+)=(.*)$/.exec(opts.optInLabel);
  if (!label) throw new UsageError(`--opt-in-label ${opts.optInLabel}: expected key=value, e.g. kupenstack.io/project=enabled`);
  const shards = opts.shards === undefined ? undefined : parseShards(opts.shards);
  const view = viewPlaceOf(opts);
  if (shards && opts.leaderElect)
    throw new UsageError('--shards and --leader-elect: pick one; with --shards each shard has its own Lease (<leader-election-id>-shard-<name>)');
  checkShardName(opts.defaultShard, '--default-shard');
  if (opts.shardGrace !== undefined && !isDuration(opts.shardGrace)) throw new UsageError(`--shard-grace ${opts.shardGrace}: not a duration (e.g. 15s)`);
  const preferred = shards ? preferredShard(shards, { preferred: opts.preferredShard, podName: process.env.POD_NAME }) : undefined;
  const timings = {
    leaseDurationMs: parseDuration(opts.leaseDuration),
    renewDeadlineMs: parseDuration(opts.renewDeadline),
    retryPeriodMs: parseDuration(opts.retryPeriod),
  };
  if ((opts.leaderElect || shards) && (timings.renewDeadlineMs >= timings.leaseDurationMs || timings.retryPeriodMs >= timings.renewDeadlineMs))
    throw new UsageError(
      `leader election needs --retry-period < --renew-deadline < --lease-duration (got ${opts.retryPeriod}, ${opts.renewDeadline}, ${opts.leaseDuration})`,
    );
  return {
    config,
    ...(cloudName ? { cloudName } : {}),
    loops,
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.clouds !== undefined ? { clouds: opts.clouds } : {}),
    ...(opts.cloudsSecret !== undefined ? { cloudsSecret: opts.cloudsSecret } : {}),
    namespaces: opts.namespace,
    optInLabel: { key: label[1]!, value: label[2]! },
    resyncMs,
    debounceMs,
    ...(workers !== undefined ? { namespaceWorkers: workers } : {}),
    apiStaleAfterMs: parseDuration(opts.apiStaleAfter),
    cloudResyncMs: parseDuration(opts.cloudResync),
    leaderElect: opts.leaderElect === true,
    leaderElectionId: opts.leaderElectionId,
    timings,
    ...(shards ? { shards } : {}),
    defaultShard: opts.defaultShard,
    ...(preferred !== undefined ? { preferred } : {}),
    ...(opts.shardGrace !== undefined ? { shardGraceMs: parseDuration(opts.shardGrace) } : {}),
    ...(listen ? { listen: { host: listen[1]!.replace(/^\[|\]$/g, ''), port: Number(listen[2]) } } : {}),
    ...(hookSecret
      ? { registryHookSecret: { ...(hookSecret[1] !== undefined ? { namespace: hookSecret[1] } : {}), name: hookSecret[2]!, key: hookSecret[3] ?? 'token' } }
      : {}),
    ...(opts.metricsTokenFile !== undefined || opts.metricsOpen === true
      ? { metricsAccess: { ...(opts.metricsTokenFile !== undefined ? { tokenFile: opts.metricsTokenFile } : {}), open: opts.metricsOpen === true } }
      : {}),
    ...(opts.syncSelector !== undefined ? { syncSelector: opts.syncSelector } : {}),
    ...(opts.cloudSelector !== undefined ? { cloudSelector: opts.cloudSelector } : {}),
    memberPolicy: { flavorExtraSpecs: opts.flavorExtraSpec },
    ...(view ? { view } : {}),
  };
}

/**
 * The process's one logger (JSON in a pod, where a log collector reads stderr; text at a terminal);
 * an error that stops it is one `fatal` line in that format too, not text (main.ts exits 1 on it).
 */
async function runLogged(opts: LogOptions, run: (logger: Logger) => Promise<never>): Promise<void> {
  const logger = loggerFrom(opts, process.stderr);
  try {
    await run(logger);
  } catch (err) {
    logger.fatal({ err }, `controller stopped: ${(err as Error).message}`);
    markLogged(err);
    throw err;
  }
}
