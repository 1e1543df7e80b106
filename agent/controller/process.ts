import { readFileSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { applyRevision } from '../act/apply.ts';
import type { AgentConfig } from '../config/config.ts';
import { SyncLoop } from './syncs/sync-loop.ts';
import { namespaceSyncKind } from './syncs/sync-kind.ts';
import type { TenantLockdown } from './syncs/tenant-lockdown.ts';
import type { EngineEvent } from '../events/events.ts';
import type { CloudContext } from '../notify/object-notice.ts';
import { loadKubeConfig } from '../kube/client.ts';
import { OpenStackCloud } from '../openstack/cloud.ts';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { KubeSecretResolver } from '../secrets/kubernetes.ts';
import type { Logger } from '../telemetry/logger.ts';
import { AgentMetrics } from '../telemetry/metrics.ts';
import { ApiContact } from './api-contact.ts';
import { ClockedCounters, countKubeCalls, type KubeCalls } from './call-counts.ts';
import { cloudFromSecret } from './clouds/cloud-from-secret.ts';
import { CloudLoop } from './clouds/cloud-loop.ts';
import { CloudConnections } from './clouds/connections.ts';
import { isAdminNamespace, type MemberPolicyOptions } from '../policy/member-policy.ts';
import { Controller } from './resources/controller.ts';
import { ConfigMapCreateJournal, createJournalName } from './resources/create-journal.ts';
import { leadershipOf, type Leadership, type LeadershipHooks } from './leadership.ts';
import type { Loops } from './loops.ts';
import { serveRoutes } from './routes.ts';
import type { MetricsAccess } from '../telemetry/metrics-access.ts';
import { shardLeaseName } from './leases/shards.ts';
import type { ViewPlace } from '../view/server.ts';
import { startView } from './view.ts';
import { RolloutLoop } from './rollouts/rollout-loop.ts';

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
  /** Who may read /metrics: --metrics-token-file, --metrics-open; default loopback only. */
  metricsAccess?: MetricsAccess;
  syncSelector?: string;
  /** Tenants' NamespaceSyncs run (unless --no-tenant-syncs, or --no-syncs), under the cluster admin's lockdown (--tenant-* flags). */
  tenantSyncs?: TenantLockdown;
  cloudSelector?: string;
  /** OpenStack's admin-only fields in tenant namespaces (agent/policy/member-policy.ts): the cluster admin's allow-lists. */
  memberPolicy: MemberPolicyOptions;
  /** --view-address: the read-only web view (view.ts). */
  view?: ViewPlace;
  /** Every line the process writes goes through it, in the one format of --log-format (the loops' own lines as messages at info). */
  logger: Logger;
  /** Sets the egress policy (agent/net/) once the namespaces' labels can be read; returns the line to log. */
  egress: (labelsOf: (namespace: string) => Readonly<Record<string, string>>) => string;
  /** Sets the cluster admin's bounds (agent/util/bounds.ts) once labels can be read, `exempt` naming the admin namespaces (their flavor sizes are theirs); returns the line to log. */
  bounds: (exempt: (namespace: string) => boolean) => string;
  /** --run-deadline: one namespace's run is abandoned at a safe point after this long, with this error. */
  runDeadline?: { ms: number; error: (namespace: string) => Error };
  /** Sets whose Images may use the controller's own registry credentials (agent/net/registry-credentials.ts); returns the line to log. */
  registryCredentials: (isAdmin: (namespace: string) => boolean) => string;
}

/**
 * What every part of the process shares: the API server's client (its calls counted), the controller's own
 * namespace, Secrets, metrics, the create journal, the OpenStack client.
 */
interface Clients {
  kc: KubeConfig;
  ownNamespace: string;
  secrets: KubeSecretResolver;
  kubeCalls: KubeCalls;
  /** Undefined without a cloud (--cloud): the resource loop is off (loops.ts). */
  cloud?: () => Promise<OpenStackCloud>;
  metrics: AgentMetrics;
  journal: ConfigMapCreateJournal;
  /** The resource and cloud loops, leases and shards write plain lines: each is one message. */
  log: (line: string) => void;
}

/** The three loops of the in-cluster front end; only the resource loop is always made (it starts only with a cloud). */
interface InClusterLoops {
  controller: Controller;
  /** The OpenStackCloudConnections the resource loop serves besides the default cloud (made with it). */
  connections?: CloudConnections;
  syncs?: SyncLoop;
  /** Tenants' NamespaceSyncs: the same loop over the namespaced kind. */
  tenantSyncs?: SyncLoop;
  clouds?: CloudLoop;
  /** ImageRollouts: runs with the resource loop (it gates that loop's Images). */
  rollouts?: RolloutLoop;
}

/**
 * The in-cluster front end as one process, the twin of standalone/agent.ts:
 * the clients, leadership (one Lease, or a Lease per shard: leadership.ts)
 * and what gaining or losing it starts and stops, the three loops
 * (resources, Syncs, the OpenStackCloud) and the HTTP side (routes.ts:
 * probes, /metrics, the Git and registry hooks). Runs until the process is stopped.
 */
export async function runController(s: ControllerSettings): Promise<never> {
  const c = clientsOf(s);
  const { log } = c;
  // The hooks name the loops made after the Leases (they need `acting`); a Lease is only sought once they started.
  const leadership = leadershipOf(
    { ...s, kc: c.kc, namespace: c.ownNamespace, metrics: c.metrics, log },
    leading(s, c, () => loops),
  );
  const loops = loopsOf(s, c, leadership);
  stopOnSignals(c, leadership, loops);
  let started = false;
  // Listing one namespace: the controller's role allows it in every mode, and it needs the API server, its token and its RBAC.
  const core = c.kc.makeApiClient(CoreV1Api);
  const apiContact = new ApiContact({
    check: async () => void (await core.listNamespace({ limit: 1 })),
    periodMs: Math.min(10_000, Math.max(1_000, s.apiStaleAfterMs / 4)),
    staleAfterMs: s.apiStaleAfterMs,
  });
  apiContact.start();
  if (s.listen) {
    const hook = s.registryHookSecret;
    const registryHookSecret = hook ? { namespace: hook.namespace ?? c.ownNamespace, name: hook.name, key: hook.key } : undefined;
    const routes = {
      listen: s.listen,
      ...(registryHookSecret ? { registryHookSecret } : {}),
      ...(s.metricsAccess ? { metricsAccess: s.metricsAccess } : {}),
      ...loops,
      secrets: c.secrets,
      metrics: c.metrics,
      logger: s.logger,
    };
    const address = await serveRoutes({ ...routes, apiContact, leadership, ready: () => started });
    log(`serving /healthz and /readyz on ${address.address}:${address.port}`);
  }
  if (s.view) await startView(s.view, s, c.kc);
  log(s.egress((ns) => loops.controller.labelsOf(ns)));
  log(s.bounds((ns) => isAdminNamespace(loops.controller.labelsOf(ns))));
  log(s.registryCredentials((ns) => isAdminNamespace(loops.controller.labelsOf(ns))));
  // The connections are listed before the first run, so a labelled namespace finds its connection.
  await loops.connections?.start();
  if (s.loops.resources) {
    // The rollouts' gate first: no namespace runs before it knows which digests are held.
    await loops.rollouts?.load();
    await loops.controller.start();
    await loops.rollouts?.start();
  } else log('no cloud given (--cloud): OpenStack resources in namespaces are not reconciled; driving OpenStackCloud only');
  await loops.syncs?.start();
  await loops.tenantSyncs?.start();
  await loops.clouds?.start();
  started = true;
  leadership.elector?.start();
  leadership.shardSet?.start();
  log(`controller started${leadershipText(s, c, leadership)}`);
  return new Promise<never>(() => {});
}

/** The clients, in the order they are made: the API server first (logged: which one, and how it was reached). */
function clientsOf(s: ControllerSettings): Clients {
  const { logger } = s;
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
  const cloud = s.cloudName ? openStackOf(s, s.cloudName, secrets, ownNamespace, counters) : undefined;
  const metrics = new AgentMetrics();
  // Read again whenever this replica starts acting: the replica it took over from may have written it last.
  const journal = new ConfigMapCreateJournal(kc.makeApiClient(CoreV1Api), ownNamespace, createJournalName(s.leaderElectionId), (err) =>
    log(`journal ${err.message}`),
  );
  return { kc, ownNamespace, secrets, kubeCalls, ...(cloud ? { cloud } : {}), metrics, journal, log };
}

/**
 * What a Lease starts and stops. The one Lease (shard undefined) leads everything; with shards, each
 * shard's namespaces, and the default shard's holder runs the Syncs (README: Sharding) and drives the
 * OpenStackCloud (one replica does). Syncs are not stopped on a loss: they ask `acting` before each run.
 */
function leading(s: ControllerSettings, c: Clients, loops: () => InClusterLoops): LeadershipHooks {
  const all = (shard: string | undefined): boolean => shard === undefined || shard === s.defaultShard;
  return {
    gained: (shard) => {
      const { controller, syncs, tenantSyncs, clouds } = loops();
      c.journal.refresh();
      if (s.loops.resources) {
        if (shard === undefined) controller.startedLeading();
        else controller.shardGained(shard);
      }
      if (all(shard)) syncs?.startedLeading();
      if (all(shard)) tenantSyncs?.startedLeading();
      if (all(shard)) clouds?.startedLeading();
    },
    lost: (shard) => {
      const { controller, clouds } = loops();
      if (s.loops.resources) {
        if (shard === undefined) controller.stoppedLeading();
        else controller.shardLost(shard);
      }
      if (all(shard)) clouds?.stoppedLeading();
    },
  };
}

/** The loops, made but not started; each asks `acting` (or its shard's Lease) before it writes. */
/** The OpenStackCloudConnections and the ImageRollouts: inputs of the resource loop that call back into it. */
function beforeResourceLoop(
  s: ControllerSettings,
  c: Clients,
  acting: Leadership['acting'],
  controller: () => Controller,
): { connections: CloudConnections; rollouts: RolloutLoop } {
  const { kc, secrets, log } = c;
  const connections = new CloudConnections({
    kc,
    secrets,
    log,
    acting,
    registry: c.metrics.registry,
    onUp: (name) => controller().connectionUp(name),
    onDown: (name, error) => controller().connectionDown(name, error),
  });
  const rollouts = new RolloutLoop({
    kc,
    custom: kc.makeApiClient(CustomObjectsApi),
    openstack: (ns) => controller().cloudOf(ns),
    projectNameOf: (ns) => `${s.config.projectPrefix}${ns}`,
    host: {
      labelsOf: (ns) => controller().labelsOf(ns),
      imagesFollowing: (pushes) => controller().imagesFollowing(pushes),
      resolveAgain: (addresses) => controller().resolveAgain(addresses),
    },
    // The default shard's holder (or the one leader) moves the waves, as it runs the Syncs.
    acting,
    log,
  });
  return { connections, rollouts };
}

function loopsOf(s: ControllerSettings, c: Clients, leadership: Leadership): InClusterLoops {
  const { config, loops, debounceMs } = s;
  const { kc, secrets, log } = c;
  const { acting } = leadership;
  const syncLoop = {
    kc,
    registry: loadSchemaRegistry(),
    config,
    secrets,
    namespace: c.ownNamespace,
    metrics: c.metrics,
    logger: s.logger,
    acting,
    selector: s.syncSelector,
  };
  const syncs = loops.syncs ? new SyncLoop(syncLoop) : undefined;
  const tenantSyncs = loops.syncs && s.tenantSyncs ? new SyncLoop({ ...syncLoop, kind: namespaceSyncKind, lockdown: s.tenantSyncs }) : undefined;
  // An object's label names its Sync; each loop finds its own (a NamespaceSync by the object's namespace) and checks its inventory.
  const toSyncs = (sync: string, e: EngineEvent, cloud?: CloudContext): void => {
    syncs?.objectEvent(sync, e, cloud);
    tenantSyncs?.objectEvent(sync, e, cloud);
  };
  const workers = s.namespaceWorkers !== undefined ? { namespaceWorkers: s.namespaceWorkers } : {};
  // Without a cloud the resource loop never starts (loops.ts): its client is never asked for.
  const noCloud = (): Promise<OpenStackCloud> => Promise.reject(new Error('no cloud given: the resource loop is off'));
  const { elector, shardSet } = leadership;
  // Both reach the resource loop through `controller` once it is made (they are made first: the gate and the connections are its inputs).
  const { connections, rollouts } = loops.resources ? beforeResourceLoop(s, c, acting, () => controller) : {};
  const controller: Controller = new Controller({
    ...(rollouts ? { imageGate: rollouts } : {}),
    kc,
    registry: loadSchemaRegistry(),
    config,
    cloud: c.cloud ?? noCloud,
    ...(connections ? { connections } : {}),
    secrets,
    engine: applyRevision,
    memberPolicy: s.memberPolicy,
    allowNamespaces: s.namespaces,
    syncEvents: toSyncs,
    optInLabel: s.optInLabel,
    resyncMs: s.resyncMs,
    debounceMs,
    ...workers,
    ...(s.runDeadline ? { runDeadline: s.runDeadline } : {}),
    log,
    leader: elector,
    kubeCalls: c.kubeCalls,
    journal: c.journal,
    ...(shardSet ? { sharding: { defaultShard: s.defaultShard, holds: (shard: string) => shardSet.holds(shard), handoverMs: s.timings.leaseDurationMs } } : {}),
  });
  // A relative spec.chart.path of the CR starts at the working directory (charts baked into the image, or a volume).
  const clouds = loops.cloudLifecycle
    ? new CloudLoop({
        kc,
        registry: loadSchemaRegistry(),
        ...(c.cloud ? { openstack: c.cloud } : {}),
        resyncMs: s.cloudResyncMs,
        debounceMs,
        acting,
        log,
        baseDir: process.cwd(),
        syncEvents: toSyncs,
        ...(s.cloudSelector ? { selector: s.cloudSelector } : {}),
      })
    : undefined;
  return {
    controller,
    ...(connections ? { connections } : {}),
    ...(rollouts ? { rollouts } : {}),
    ...(syncs ? { syncs } : {}),
    ...(tenantSyncs ? { tenantSyncs } : {}),
    ...(clouds ? { clouds } : {}),
  };
}

/** SIGINT and SIGTERM: the Leases are released first, so another replica takes over at once; then the loops stop. */
function stopOnSignals(c: Clients, { elector, shardSet }: Leadership, { controller, connections, syncs, tenantSyncs, clouds, rollouts }: InClusterLoops): void {
  const stop = (): void => {
    c.log('stopping');
    void Promise.all([elector?.stop(), shardSet?.stop()])
      .then(() => Promise.all([controller.stop(), connections?.stop(), rollouts?.stop(), syncs?.stop(), tenantSyncs?.stop(), clouds?.stop()]))
      .then(() => {
        c.secrets.stop();
        process.exit(0);
      });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** The started line's account of leadership: which Lease, or which shards and their Leases. */
function leadershipText(s: ControllerSettings, c: Clients, { elector, shardSet }: Leadership): string {
  const { shards, preferred } = s;
  const leaderElection = elector ? ` (leader election: ${elector.identity} on Lease ${c.ownNamespace}/${s.leaderElectionId})` : '';
  const sharding =
    shardSet && shards
      ? ` (shards ${shards.join(', ')} as ${shardSet.identity}${preferred ? `, preferring ${preferred}` : ''}; ` +
        `Leases ${c.ownNamespace}/${shardLeaseName(s.leaderElectionId, '<shard>')}; default shard ${s.defaultShard})`
      : '';
  return `${leaderElection}${sharding}`;
}

/** The OpenStack client: from a clouds.yaml Secret (read again when it changes) or from a clouds.yaml file. */
function openStackOf(
  s: ControllerSettings,
  cloudName: string,
  secrets: KubeSecretResolver,
  ownNamespace: string,
  counters: ClockedCounters,
): () => Promise<OpenStackCloud> {
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
