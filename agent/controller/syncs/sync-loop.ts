import * as k8s from '@kubernetes/client-node';
import type { AgentConfig } from '../../config/config.ts';
import { dependencyWait, findCycle, type DependencyState } from '../../sync/depends-on.ts';
import { syncConfigOf, type SyncConfig } from '../../sync/settings.ts';
import { KupenstackError } from '../../errors.ts';
import { rewatchOnError } from '../../kube/rewatch.ts';
import type { SyncSpec } from '../../model/kinds.generated.ts';
import type { Logger } from '../../telemetry/logger.ts';
import type { AgentMetrics } from '../../telemetry/metrics.ts';
import { Scheduler, type Trigger } from '../../sync/scheduler.ts';
import { sourceForSync } from '../../sync/sync-source.ts';
import { reasons } from '../../sync/conditions.ts';
import { group, version, type SchemaRegistry } from '../../schema/registry.ts';
import { Notifier } from '../../notify/notifier.ts';
import { objectNotice, type CloudContext } from '../../notify/object-notice.ts';
import type { EngineEvent } from '../../events/events.ts';
import type { SecretResolver } from '../../secrets/resolver.ts';
import type { Source } from '../../source/source.ts';
import { syncWriter } from './impersonate.ts';
import { clusterCrossSync, type SyncView } from './cross-sync.ts';
import { clusterSyncKind, SyncResources, syncKey, syncRefOf, type SyncKind } from './sync-kind.ts';
import {
  checkSourceEgress,
  namespacedSecrets,
  noLockdown,
  outsideNamespace,
  overObjectLimit,
  tenantServiceAccount,
  tenantSpecProblem,
  type TenantLockdown,
} from './tenant-lockdown.ts';
import type { DesiredObject } from './cluster-apply.ts';
import { fieldManagerOf } from './inventory.ts';
import { KubeSyncStatusStore, statusManager, type SyncResourceStatus } from './status-store.ts';
import { SyncWorker } from './sync-worker.ts';

/** Set by a webhook delivery (on whichever replica the Service chose); the leader's watch sees it and runs the Sync. Flux's reconcile.fluxcd.io/requestedAt. */
export const requestedAtAnnotation = 'kupenstack.io/reconcile-requested-at';

interface SyncObject extends k8s.KubernetesObject {
  /** A NamespaceSync's namespace is set; a Sync has none. */
  metadata: k8s.V1ObjectMeta & { name: string };
  spec: SyncSpec;
  status?: SyncResourceStatus;
}

interface Running {
  generation?: number;
  store?: KubeSyncStatusStore;
  requestedAt?: string;
  scheduler?: Scheduler;
  source?: Source;
  sync?: SyncConfig;
  object: SyncObject;
  /** What the last gated run waited for (dependsOn), so a change of a dependency starts this Sync, and an Event is sent once per reason. */
  waiting?: string;
  /** The Sync's notify targets (spec.notify); also told of what happens to its objects between runs (objectEvent). */
  notifier?: Notifier;
}

export interface SyncLoopOptions {
  kc: k8s.KubeConfig;
  registry: SchemaRegistry;
  config: AgentConfig;
  /** Resolves Secrets in the controller's namespace: Git credentials, webhook secrets. */
  secrets: SecretResolver;
  /** The controller's namespace: default namespace of spec.serviceAccountName. */
  namespace: string;
  metrics: AgentMetrics;
  logger: Logger;
  acting: () => boolean;
  /** Only Syncs matching this label selector (several controllers on one cluster, tests). */
  selector?: string;
  /** Which kind this loop runs: the cluster's Syncs (default) or tenants' NamespaceSyncs. */
  kind?: SyncKind;
  /** For NamespaceSyncs: the cluster admin's lockdown (tenant-lockdown.ts). */
  lockdown?: TenantLockdown;
}

/**
 * The in-cluster Sync loop, the first of the two loops (Flux kustomize-controller's
 * job: Git → custom resources, as the Sync's ServiceAccount, so Kubernetes RBAC decides
 * what a repository may create where): watches the cluster-scoped
 * Sync resources and runs each on its own clock (agent/sync/scheduler.ts)
 * with a SyncWorker whose writes impersonate the Sync's ServiceAccount. The
 * resource loop then takes the custom resources to OpenStack. A changed spec
 * starts the Sync afresh; deleting a Sync leaves its objects in place
 * (like Flux's `prune: false` on delete; delete them with
 * `kubectl delete … -l kupenstack.io/sync=<name>`).
 */
export class SyncLoop {
  private readonly o: SyncLoopOptions;
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly resources: SyncResources;
  private readonly kind: SyncKind;
  /** Keyed by syncKey: `name`, or `namespace/name` for a NamespaceSync. */
  private readonly running = new Map<string, Running>();
  private informer?: k8s.Informer<SyncObject> & k8s.ObjectCache<SyncObject>;
  private stopped = false;

  constructor(opts: SyncLoopOptions) {
    this.o = opts;
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
    this.kind = opts.kind ?? clusterSyncKind;
    this.resources = new SyncResources(this.custom, this.kind);
  }

  async start(): Promise<void> {
    const informer = k8s.makeInformer<SyncObject>(
      this.o.kc,
      `/apis/${group}/${version}/${this.kind.plural}`,
      async () => (await this.resources.list(this.o.selector)) as k8s.KubernetesListObject<SyncObject>,
      this.o.selector,
    );
    informer.on('add', (s) => void this.onSync(s));
    informer.on('update', (s) => void this.onSync(s));
    informer.on('delete', (s) => void this.forget(syncKey(s.metadata)).then(() => this.roomMade(s.metadata.namespace)));
    rewatchOnError(
      informer,
      this.kind.plural,
      (line) => this.o.logger.warn(line),
      () => this.stopped,
    );
    this.informer = informer;
    await informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer?.stop().catch(() => {});
    await Promise.all([...this.running.keys()].map((name) => this.forget(name)));
  }

  /** Leadership gained: every Sync runs now (what came while following was not applied). */
  startedLeading(): void {
    for (const [key, r] of this.running) {
      void this.resources
        .get(syncRefOf(key))
        .then((fresh) => r.store?.reload((fresh as SyncObject).status))
        .catch(() => r.store?.reload(r.object.status))
        .finally(() => r.scheduler?.trigger('startup'));
    }
  }

  /** What a webhook needs of a Sync: its settings, once its spec is valid. */
  /**
   * An engine or cloud event about an object this Sync applied (the resource and cloud loops find the Sync by the
   * object's label kupenstack.io/sync, and its inventory confirms it): a notice to its targets, under its last applied revision. Runs on the replica
   * that runs Syncs; a shard held elsewhere tells nothing (README: Notifications).
   */
  objectEvent(sync: string, event: EngineEvent, cloud?: CloudContext): void {
    // A NamespaceSync's objects are in its namespace: the event's address (`namespace/Kind/name`) names it.
    const key = this.kind.namespaced ? `${event.address.split('/')[0] ?? ''}/${sync}` : sync;
    const r = this.running.get(key);
    if (!r?.notifier || !r.store) return;
    // The label alone is the object's word (a tenant may set it): only what the Sync's inventory holds tells its targets.
    if (!r.store.inventory.some((e) => `${e.namespace ?? ''}/${e.kind}/${e.name}` === event.address)) return;
    const n = objectNotice(key, r.store.status.lastAppliedRevision ?? '', event, cloud);
    if (n) r.notifier.notify(n);
  }

  /** A Sync's settings by its key (`name`, or `namespace/name` for a NamespaceSync). */
  syncConfig(key: string): SyncConfig | undefined {
    return this.running.get(key)?.sync;
  }

  /** The Syncs with an OCI source this predicate accepts (a registry notification names their repository and tag). */
  syncsFollowing(follows: (oci: { url: string; ref: { tag?: string; semver?: string; digest?: string } }) => boolean): string[] {
    return [...this.running.entries()].flatMap(([name, r]) => (r.sync?.source.oci && follows(r.sync.source.oci) ? [name] : [])).sort();
  }

  /** A verified push for this Sync: recorded on the resource, so the leader runs it whichever replica received the push. */
  async requestRun(key: string): Promise<void> {
    await this.resources.patch(syncRefOf(key), { metadata: { annotations: { [requestedAtAnnotation]: new Date().toISOString() } } });
  }

  private async onSync(s: SyncObject): Promise<void> {
    const name = syncKey(s.metadata);
    const r = this.running.get(name);
    const requestedAt = s.metadata.annotations?.[requestedAtAnnotation];
    if (r && r.generation === s.metadata.generation) {
      r.object = s;
      if (requestedAt && requestedAt !== r.requestedAt) {
        r.requestedAt = requestedAt;
        // Acknowledged but not run; the log says so, so an operator sees the request arrived.
        if (r.scheduler?.suspended) this.o.logger.info({ sync: name, requestedAt, reason: 'Suspended' }, 'reconcile request not run: the Sync is suspended');
        else r.scheduler?.trigger('webhook');
      }
      this.wakeDependents(name);
      return;
    }
    await this.forget(name);
    const next: Running = { generation: s.metadata.generation, requestedAt, object: s };
    this.running.set(name, next);
    try {
      await this.begin(next);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.o.logger.error({ sync: name, error: message }, 'Sync cannot run');
      if (this.o.acting()) await this.stall(s, 'InvalidSpec', message).catch(() => {});
    }
  }

  /** The spec checked for the cluster (and, for a NamespaceSync, the lockdown): its settings and whom it writes as. */
  private async accepted(s: SyncObject): Promise<{ sync: SyncConfig; serviceAccount: { namespace: string; name: string }; secrets: SecretResolver }> {
    const { name, namespace } = s.metadata;
    const spec = s.spec;
    const what = `${this.kind.kind} ${syncKey(s.metadata)}`;
    const fail = (key: (string | number)[], message: string): Error => new KupenstackError('sync.invalid', `${what} spec.${key.join('.')}: ${message}`);
    const sync = syncConfigOf(name, spec, { owner: this.o.config.owner, projectPrefix: this.o.config.projectPrefix, single: false }, fail);
    // A NamespaceSync's Secrets are of its namespace; a Sync's of the controller's.
    const home = this.kind.namespaced && namespace ? namespace : this.o.namespace;
    if (sync.source.directory) throw fail(['source', 'directory'], 'a directory source is for standalone runs; in the cluster use source.git or source.oci');
    if (sync.source.oci?.dockerConfigFile !== undefined) {
      throw fail(
        ['source', 'oci', 'dockerConfigFile'],
        `in the cluster the registry credentials are a Secret in ${home}: use secretRef (kubectl create secret docker-registry)`,
      );
    }
    if (spec.webhook && !spec.webhook.secretRef)
      throw fail(['webhook'], `in the cluster the webhook secret is a Secret in ${home}: use webhook.secretRef (key "token")`);
    spec.notify?.forEach((n, i) => {
      if (n.secretEnv !== undefined || n.secretFile !== undefined)
        throw fail(['notify', i], `in the cluster a notification secret is a Secret in ${home}: use secretRef (key "token")`);
    });
    if (this.kind.namespaced && namespace) {
      const lockdown = this.o.lockdown ?? noLockdown;
      const problem = tenantSpecProblem(spec, sync, lockdown);
      if (problem) throw fail(...problem);
      const over = this.overSyncLimit(s, lockdown);
      if (over) throw fail(['source'], over);
      await checkSourceEgress(sync, namespace, lockdown);
      return { sync, serviceAccount: tenantServiceAccount(spec, namespace, lockdown), secrets: namespacedSecrets(this.o.secrets, namespace) };
    }
    if (!spec.serviceAccountName)
      throw fail(
        ['serviceAccountName'],
        `set the ServiceAccount whose RBAC decides what this repository may create (the controller writes nothing with its own identity), e.g. serviceAccountName: ${name}`,
      );
    return { sync, serviceAccount: { namespace: spec.serviceAccountNamespace ?? this.o.namespace, name: spec.serviceAccountName }, secrets: this.o.secrets };
  }

  /** A NamespaceSync deleted: those of its namespace refused (--tenant-max-syncs) are looked at again, the oldest may run now. */
  private roomMade(namespace: string | undefined): void {
    if (!namespace || this.o.lockdown?.maxSyncsPerNamespace === undefined) return;
    for (const o of this.informer?.list() ?? []) {
      const key = syncKey(o.metadata);
      if (o.metadata.namespace !== namespace || this.running.get(key)?.scheduler) continue;
      this.running.delete(key);
      void this.onSync(o);
    }
  }

  /** --tenant-max-syncs: the namespace's oldest NamespaceSyncs run, a later one beyond the limit is refused. */
  private overSyncLimit(s: SyncObject, lockdown: TenantLockdown): string | undefined {
    const max = lockdown.maxSyncsPerNamespace;
    if (max === undefined) return undefined;
    const age = (o: SyncObject): string => `${new Date(o.metadata.creationTimestamp ?? 0).toISOString()}/${o.metadata.name}`;
    const siblings = (this.informer?.list() ?? []).filter((o) => o.metadata.namespace === s.metadata.namespace).sort((a, b) => age(a).localeCompare(age(b)));
    const at = siblings.findIndex((o) => o.metadata.name === s.metadata.name);
    return at >= max ? `namespace ${s.metadata.namespace} already has ${max} NamespaceSyncs, the cluster's limit (--tenant-max-syncs); delete one` : undefined;
  }

  /** A NamespaceSync's revision: every object in its namespace, and within the namespace's objects limit (both reject the whole revision). */
  private tenantRefusals(s: SyncObject, objects: DesiredObject[]): string[] {
    const namespace = s.metadata.namespace;
    if (!this.kind.namespaced || !namespace) return [];
    const outside = outsideNamespace(objects, namespace);
    if (outside.length > 0) return outside;
    const others = (this.informer?.list() ?? [])
      .filter((o) => o.metadata.namespace === namespace && o.metadata.name !== s.metadata.name)
      .reduce((n, o) => n + (o.status?.inventory?.length ?? 0), 0);
    const over = overObjectLimit(objects.length, others, namespace, this.o.lockdown ?? noLockdown);
    return over ? [over] : [];
  }

  private async begin(r: Running): Promise<void> {
    const s = r.object;
    const name = s.metadata.name;
    const key = syncKey(s.metadata);
    const spec = s.spec;
    const { sync, serviceAccount, secrets } = await this.accepted(s);
    r.sync = sync;
    const writer = syncWriter(this.o.kc, serviceAccount);
    const source = await sourceForSync(sync, this.o.config, secrets);
    r.source = source;
    // The status as stored now, not as the watch last showed it: the previous worker's last write (its inventory) may not have arrived yet.
    const fresh = (await this.resources.get(s.metadata)) as SyncObject;
    const where = { kind: this.kind, ...(s.metadata.namespace ? { namespace: s.metadata.namespace } : {}) };
    const store = new KubeSyncStatusStore(this.custom, this.o.acting, name, source.description, sync.suspend, fresh.status, where);
    store.generation = s.metadata.generation;
    r.store = store;
    const log = this.o.logger.child({ sync: key });
    // A NamespaceSync's notifications go out under its namespace's egress rules.
    const egressNamespace = s.metadata.namespace ?? `(Sync ${name})`;
    r.notifier = sync.notify ? new Notifier({ targets: sync.notify, secrets, log, egressNamespace }) : undefined;
    const worker = new SyncWorker({
      sync,
      massDeleteThreshold: spec.massDeleteThreshold ?? 50,
      source,
      store,
      writer,
      registry: this.o.registry,
      metrics: this.o.metrics,
      log,
      acting: this.o.acting,
      event: (type, reason, message) => this.event(r.object, type, reason, message),
      annotations: () => r.object.metadata.annotations ?? {},
      lookAgain: (afterMs) => r.scheduler?.lookAgain(afterMs),
      ...(r.notifier ? { notifier: r.notifier } : {}),
      crossSync: clusterCrossSync(name, () => this.syncViews(s.metadata.namespace), this.custom, this.o.registry),
      ...(this.kind.namespaced
        ? {
            runName: key,
            fieldManager: fieldManagerOf(`${s.metadata.namespace ?? ''}.${name}`),
            refuse: (objects: DesiredObject[]) => this.tenantRefusals(r.object, objects),
          }
        : {}),
    });
    r.scheduler = new Scheduler(
      { intervalMs: sync.intervalMs, retryIntervalMs: sync.retryIntervalMs, timeoutMs: sync.timeoutMs, schedule: sync.schedule, suspend: sync.suspend },
      (t: Trigger, signal) => this.runAfterDependencies(r, worker, t, signal),
      (err) => log.error({ error: err instanceof Error ? err.message : String(err) }, 'run failed'),
    );
    log.info(
      { source: source.description, serviceAccount: `${serviceAccount.namespace}/${serviceAccount.name}`, interval: spec.interval ?? 'default' },
      `watching ${this.kind.kind}`,
    );
    if (sync.suspend && this.o.acting()) {
      store.condition('Reconciling', 'False', 'Suspended', 'suspend: true — no fetch, no apply, no drift correction');
      await store.save();
    }
    r.scheduler.start();
  }

  /**
   * dependsOn (Flux's Kustomization dependsOn): the run starts only once every
   * Sync depended on is Ready at its newest revision, read from the watch
   * cache. Until then the Sync says what it waits for (DependencyNotReady) and
   * retries with backoff; a dependency's status change wakes it at once. A
   * cycle through this Sync stalls it (DependencyCycle).
   */
  private async runAfterDependencies(r: Running, worker: SyncWorker, trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    // The request this run answers is the one known when it starts (`kupenstack reconcile sync` waits for it).
    const request = r.requestedAt;
    const ok = await this.gatedRun(r, worker, trigger, signal);
    if (request && r.store && r.store.lastHandledReconcileAt !== request && this.o.acting()) {
      r.store.lastHandledReconcileAt = request;
      await r.store.save();
    }
    return ok;
  }

  private async gatedRun(r: Running, worker: SyncWorker, trigger: Trigger, signal: AbortSignal): Promise<boolean> {
    const deps = r.sync?.dependsOn ?? [];
    if (deps.length === 0) return worker.run(trigger, signal);
    const name = syncKey(r.object.metadata);
    // A NamespaceSync depends on NamespaceSyncs of its own namespace: the keys are `namespace/name`.
    const keyOf = (s: SyncObject, dep: string): string => syncKey({ ...(s.metadata.namespace ? { namespace: s.metadata.namespace } : {}), name: dep });
    const edges = new Map((this.informer?.list() ?? []).map((s) => [syncKey(s.metadata), (s.spec.dependsOn ?? []).map((d) => keyOf(s, d.name))]));
    const cycle = findCycle(edges, name);
    const own = cycle?.includes(name) ? cycle : undefined;
    const why = own ? undefined : deps.map((d) => dependencyWait(d, this.dependencyState(keyOf(r.object, d)))).find((w) => w !== undefined);
    if (!own && why === undefined) {
      r.waiting = undefined;
      return worker.run(trigger, signal);
    }
    if (!this.o.acting() || !r.store) return false;
    const st = r.store;
    const reason = own ? reasons.dependencyCycle : reasons.dependencyNotReady;
    const message = own
      ? `dependsOn forms a cycle ${own.join(' → ')}: each waits for the other forever; remove one of these dependencies`
      : `waiting: ${why ?? ''}`;
    st.condition('Ready', 'False', reason, message);
    st.condition(
      'Stalled',
      own ? 'True' : 'False',
      own ? reason : reasons.retrying,
      own ? 'fix spec.dependsOn' : 'checking again when a dependency changes, and with backoff',
    );
    st.condition('Reconciling', 'False', reason, message);
    await st.save();
    if (r.waiting !== message) this.event(r.object, own ? 'Warning' : 'Normal', reason, message);
    r.waiting = message;
    this.o.logger.info({ sync: name, trigger, reason }, message);
    return false;
  }

  /** Every Sync of this kind (of one namespace, for NamespaceSyncs) as the watch cache shows it: dependsOn and inventory (references across Syncs). */
  private syncViews(namespace: string | undefined): SyncView[] {
    return (this.informer?.list() ?? [])
      .filter((s) => s.metadata.namespace === namespace)
      .map((s) => ({
        name: s.metadata.name,
        dependsOn: (s.spec.dependsOn ?? []).map((d) => d.name),
        inventory: s.status?.inventory ?? [],
      }));
  }

  /** A dependency's status as the watch cache has it; a spec not acted on yet is not Ready. */
  private dependencyState(key: string): DependencyState | undefined {
    const ref = syncRefOf(key);
    const s = this.informer?.get(ref.name, ref.namespace);
    if (!s) return undefined;
    const ready = s.status?.conditions?.find((c) => c.type === 'Ready');
    const current = s.status?.observedGeneration === undefined || s.status.observedGeneration === s.metadata.generation;
    return {
      ready: current
        ? ready
          ? { status: ready.status, reason: ready.reason, message: ready.message }
          : undefined
        : { status: 'Unknown', reason: 'NewSpec', message: 'its new spec is not acted on yet' },
      lastFetchedRevision: s.status?.lastFetchedRevision,
      lastAppliedRevision: s.status?.lastAppliedRevision,
    };
  }

  /** Syncs waiting for `name` look again now (its status changed). */
  private wakeDependents(key: string): void {
    const ref = syncRefOf(key);
    for (const other of this.running.values())
      if (other.waiting !== undefined && other.object.metadata.namespace === ref.namespace && other.sync?.dependsOn.includes(ref.name))
        other.scheduler?.trigger('dependency');
  }

  private async forget(name: string): Promise<void> {
    const r = this.running.get(name);
    if (!r) return;
    this.running.delete(name);
    await r.scheduler?.stop(5_000);
    await r.source?.close().catch(() => {});
  }

  /** A spec the loop cannot run: Stalled, with the message saying what to change. */
  private async stall(s: SyncObject, reason: string, message: string): Promise<void> {
    const where = { kind: this.kind, ...(s.metadata.namespace ? { namespace: s.metadata.namespace } : {}) };
    const store = new KubeSyncStatusStore(this.custom, this.o.acting, s.metadata.name, '', false, s.status, where);
    store.generation = s.metadata.generation;
    store.condition('Ready', 'False', reason, message);
    store.condition('Stalled', 'True', reason, 'fix the Sync spec');
    store.condition('Reconciling', 'False', reasons.retryScheduled, 'waiting for a new spec');
    await store.save();
    this.event(s, 'Warning', reason, message);
  }

  /** Events of a cluster-scoped object live in `default`, where `kubectl describe sync` looks; a NamespaceSync's in its namespace. Fire and forget. */
  private event(s: SyncObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (!this.o.acting()) return;
    const now = new Date();
    const namespace = s.metadata.namespace ?? 'default';
    const body: k8s.CoreV1Event = {
      metadata: { generateName: `${s.metadata.name}.`, namespace },
      involvedObject: {
        apiVersion: `${group}/${version}`,
        kind: this.kind.kind,
        ...(s.metadata.namespace ? { namespace } : {}),
        name: s.metadata.name,
        uid: s.metadata.uid,
        resourceVersion: s.metadata.resourceVersion,
      },
      reason,
      message: message.slice(0, 1024),
      type,
      source: { component: statusManager },
      reportingComponent: statusManager,
      reportingInstance: statusManager,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    void this.core
      .createNamespacedEvent({ namespace, body })
      .catch((err: unknown) => this.o.logger.warn({ sync: s.metadata.name, reason, code: (err as { code?: number }).code }, 'could not record an Event'));
  }
}
