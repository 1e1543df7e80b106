import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { applyRevision } from '../act/apply.ts';
import type { AgentConfig } from '../config/config.ts';
import { syncHttpHandler } from './syncs/hooks.ts';
import { SyncLoop } from './syncs/sync-loop.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { KubeSecretResolver } from '../secrets/kubernetes.ts';
import type { Logger } from '../telemetry/logger.ts';
import { AgentMetrics } from '../telemetry/metrics.ts';
import { ApiContact } from './api-contact.ts';
import { ClockedCounters, countKubeCalls } from './call-counts.ts';
import { cloudFromSecret } from './clouds/cloud-from-secret.ts';
import { CloudLoop } from './clouds/cloud-loop.ts';
import type { MemberPolicyOptions } from '../policy/member-policy.ts';
import { Controller } from './resources/controller.ts';
import { ConfigMapCreateJournal, createJournalName } from './resources/create-journal.ts';
import { serveHealth } from './health.ts';
import { holderIdentity, LeaderElector } from './leases/leader.ts';
import type { Loops } from './loops.ts';
import { registryHookHandler } from './registry-hook.ts';
import { ShardSet } from './leases/shard-set.ts';
import { shardLeaseName } from './leases/shards.ts';

const serviceAccountNamespace = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The in-cluster process as `kupenstack controller` parsed it from its flags. */
export interface ControllerSettings {
  config: AgentConfig;
  /** The clouds.yaml entry of the cloud; without one only the cloud lifecycle (and Syncs) run (loops.ts). */
  cloudName?: string;
  loops: Loops;
  kubeconfig?: string;
  clouds?: string;
  /** `[namespace/]name` of a Secret holding clouds.yaml (re-read on change). */
  cloudsSecret?: string;
  /** Namespaces reconciled whatever their labels. */
  namespaces: string[];
  optInLabel: { key: string; value: string };
  resyncMs: number;
  debounceMs: number;
  /** --namespace-workers: namespaces run at once. */
  namespaceWorkers?: number;
  /** `/healthz` fails once the API server has not answered this replica for this long (agent/controller/api-contact.ts). */
  apiStaleAfterMs: number;
  cloudResyncMs: number;
  leaderElect: boolean;
  leaderElectionId: string;
  timings: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  shards?: string[];
  defaultShard: string;
  preferred?: string;
  shardGraceMs?: number;
  listen?: { host: string; port: number };
  registryHookSecret?: { namespace?: string; name: string; key: string };
  syncSelector?: string;
  cloudSelector?: string;
  /** OpenStack's admin-only fields in tenant namespaces (agent/policy/member-policy.ts): the cluster admin's allow-lists. */
  memberPolicy: MemberPolicyOptions;
  /** Every line the process writes goes through it, in the one format of --log-format (the loops' own lines as messages at info). */
  logger: Logger;
  /** Sets the egress policy (agent/net/) once the namespaces' labels can be read; returns the line to log. */
  egress: (labelsOf: (namespace: string) => Readonly<Record<string, string>>) => string;
}

/**
 * One piece on purpose (~175 lines): it is the wiring of one process, each
 * step a constructor call read top to bottom, and the leadership callbacks
 * name the loops made after them; cut, a dozen locals would travel between
 * the pieces.
 *
 * The in-cluster front end as one process, the twin of standalone/agent.ts:
 * the clients, the create journal, leadership (one Lease, or a Lease per
 * shard) and what gaining or losing it starts and stops, the three loops
 * (resources, Syncs, the OpenStackCloud) and the HTTP side (probes,
 * /metrics, the Git and registry hooks). Runs until the process is stopped.
 */
export async function runController(s: ControllerSettings): Promise<never> {
  const { config, cloudName, loops, resyncMs, debounceMs, shards, preferred, timings, logger } = s;
  // The resource and cloud loops, leases and shards write plain lines: each is one message.
  const log = (line: string): void => logger.info(line);
  const kc = loadKubeConfig({ kubeconfig: s.kubeconfig });
  // Which API server, and whether from a kubeconfig or the pod's service account ("inCluster").
  const server = kc.getCurrentCluster()?.server ?? '?';
  const cluster = kc.getCurrentCluster()?.name ?? '?';
  logger.info({ server, cluster }, `Kubernetes API ${server} (cluster "${cluster}")`);
  const ownNamespace = readOwnNamespace() ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'kupenstack-system';
  const secrets = new KubeSecretResolver(kc, ownNamespace);
  const counters = new ClockedCounters();
  const kubeCalls = countKubeCalls(kc);
  const cloud = cloudName ? openStackOf(s, cloudName, secrets, ownNamespace, counters) : undefined;
  let elector: LeaderElector | undefined;
  let shardSet: ShardSet | undefined;
  const metrics = new AgentMetrics();
  // Read again whenever this replica starts acting: the replica it took over from may have written it last.
  const journal = new ConfigMapCreateJournal(kc.makeApiClient(CoreV1Api), ownNamespace, createJournalName(s.leaderElectionId), (err) => log(`journal ${err.message}`));
  if (shards) {
    shardSet = new ShardSet({
      coordination: kc.makeApiClient(CoordinationV1Api),
      namespace: ownNamespace,
      leasePrefix: s.leaderElectionId,
      shards,
      preferred,
      identity: holderIdentity(),
      ...timings,
      graceMs: s.shardGraceMs ?? timings.leaseDurationMs,
      log,
      onGained: (shard) => {
        journal.refresh();
        if (loops.resources) controller.shardGained(shard);
        // Syncs are run by the holder of the default shard (README: Sharding).
        if (shard === s.defaultShard) syncs?.startedLeading();
        // So is the cloud lifecycle: one replica drives the OpenStackCloud.
        if (shard === s.defaultShard) clouds?.startedLeading();
      },
      onLost: (shard) => {
        if (loops.resources) controller.shardLost(shard);
        if (shard === s.defaultShard) clouds?.stoppedLeading();
      },
      onChange: (held) => {
        log(`shards  held by ${shardSet?.identity ?? 'this replica'}: ${held.length ? held.join(', ') : 'none'} (of ${shards.join(', ')}${preferred ? `; prefers ${preferred}` : ''})`);
      },
    });
    metrics.shards = shardSet;
  }
  if (s.leaderElect) {
    elector = new LeaderElector({
      coordination: kc.makeApiClient(CoordinationV1Api),
      namespace: ownNamespace,
      name: s.leaderElectionId,
      identity: holderIdentity(),
      ...timings,
      log,
      onStartedLeading: () => {
        journal.refresh();
        if (loops.resources) controller.startedLeading();
        syncs?.startedLeading();
        clouds?.startedLeading();
      },
      onStoppedLeading: () => {
        if (loops.resources) controller.stoppedLeading();
        clouds?.stoppedLeading();
      },
    });
  }
  const acting = (): boolean => (shardSet ? shardSet.holds(s.defaultShard) : !elector || elector.isLeader());
  const syncs = loops.syncs
    ? new SyncLoop({
        kc,
        registry: loadSchemaRegistry(),
        config,
        secrets,
        namespace: ownNamespace,
        metrics,
        logger,
        acting,
        selector: s.syncSelector,
      })
    : undefined;
  const workers = s.namespaceWorkers !== undefined ? { namespaceWorkers: s.namespaceWorkers } : {};
  // Without a cloud the resource loop never starts (loops.ts): its client is never asked for.
  const noCloud = (): Promise<OpenStackCloud> => Promise.reject(new Error('no cloud given: the resource loop is off'));
  const controller = new Controller({
    kc,
    registry: loadSchemaRegistry(),
    config,
    cloud: cloud ?? noCloud,
    secrets,
    engine: applyRevision,
    memberPolicy: s.memberPolicy,
    allowNamespaces: s.namespaces,
    syncEvents: (sync, e) => syncs?.objectEvent(sync, e),
    optInLabel: s.optInLabel,
    resyncMs,
    debounceMs,
    ...workers,
    log,
    leader: elector,
    kubeCalls,
    journal,
    ...(shardSet ? { sharding: { defaultShard: s.defaultShard, holds: (s: string) => shardSet.holds(s), handoverMs: timings.leaseDurationMs } } : {}),
  });
  // A relative spec.chart.path of the CR starts at the working directory (charts baked into the image, or a volume).
  const clouds = loops.cloudLifecycle
    ? new CloudLoop({
        kc,
        registry: loadSchemaRegistry(),
        ...(cloud ? { openstack: cloud } : {}),
        resyncMs: s.cloudResyncMs,
        debounceMs,
        acting,
        log,
        baseDir: process.cwd(),
        syncEvents: (sync, e, c) => syncs?.objectEvent(sync, e, c),
        ...(s.cloudSelector ? { selector: s.cloudSelector } : {}),
      })
    : undefined;
  const stop = (): void => {
    log('stopping');
    // The Lease is released first, so the other replica takes over at once.
    void Promise.all([elector?.stop(), shardSet?.stop()]).then(() => Promise.all([controller.stop(), syncs?.stop(), clouds?.stop()])).then(() => {
      secrets.stop();
      process.exit(0);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let started = false;
  // Listing one namespace: the controller's role allows it in every mode, and it needs the API server, its token and its RBAC.
  const core = kc.makeApiClient(CoreV1Api);
  const apiContact = new ApiContact({
    check: async () => void (await core.listNamespace({ limit: 1 })),
    periodMs: Math.min(10_000, Math.max(1_000, s.apiStaleAfterMs / 4)),
    staleAfterMs: s.apiStaleAfterMs,
  });
  apiContact.start();
  if (s.listen) {
    const registryHook = registryHookHandler(
      controller,
      secrets,
      s.registryHookSecret ? { namespace: s.registryHookSecret.namespace ?? ownNamespace, name: s.registryHookSecret.name, key: s.registryHookSecret.key } : undefined,
      metrics,
      logger,
      syncs,
    );
    const syncHooks = syncs ? syncHttpHandler(syncs, secrets, metrics, logger) : undefined;
    // /hooks/registry first: the Sync hooks would take it for a Sync named "registry".
    const extra = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> => {
      if (path === '/metrics') return metrics.serve(res).then(() => true);
      return (await registryHook(req, res, path)) || (syncHooks !== undefined && (await syncHooks(req, res, path)));
    };
    const { address } = await serveHealth(s.listen.host, s.listen.port, {
      ready: () => started,
      live: () => apiContact.verdict(),
      leader: () => (shardSet ? shardSet.held().length > 0 : elector?.isLeader()),
      ...(shardSet ? { shards: () => shardSet.held() } : {}),
      extra,
    });
    log(`serving /healthz and /readyz on ${address.address}:${address.port}`);
  }
  log(s.egress((ns) => controller.labelsOf(ns)));
  if (loops.resources) await controller.start();
  else log('no cloud given (--cloud): OpenStack resources in namespaces are not reconciled; driving OpenStackCloud only');
  await syncs?.start();
  await clouds?.start();
  started = true;
  elector?.start();
  shardSet?.start();
  const leaderElection = elector ? ` (leader election: ${elector.identity} on Lease ${ownNamespace}/${s.leaderElectionId})` : '';
  const sharding =
    shardSet && shards
      ? ` (shards ${shards.join(', ')} as ${shardSet.identity}${preferred ? `, preferring ${preferred}` : ''}; ` +
        `Leases ${ownNamespace}/${shardLeaseName(s.leaderElectionId, '<shard>')}; default shard ${s.defaultShard})`
      : '';
  log(`controller started${leaderElection}${sharding}`);
  return new Promise<never>(() => {});
}

/** The OpenStack client: from a clouds.yaml Secret (read again when it changes) or from a clouds.yaml file. */
function openStackOf(s: ControllerSettings, cloudName: string, secrets: KubeSecretResolver, ownNamespace: string, counters: ClockedCounters): () => Promise<OpenStackCloud> {
  if (s.cloudsSecret) {
    const [namespace, name] = s.cloudsSecret.includes('/') ? s.cloudsSecret.split('/', 2) : [ownNamespace, s.cloudsSecret];
    return cloudFromSecret(secrets, { namespace, name: name!, key: 'clouds.yaml' }, cloudName, counters);
  }
  const fixed = OpenStackCloud.fromCloudsYaml(cloudName, s.clouds ?? s.config.clouds, counters);
  return () => Promise.resolve(fixed);
}

function readOwnNamespace(): string | undefined {
  try {
    return readFileSync(serviceAccountNamespace, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
