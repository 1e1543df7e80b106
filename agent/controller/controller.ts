import * as k8s from '@kubernetes/client-node';
import { subsetOf, type ApplyReport, type EngineDeps, type EngineOptions, type RevisionInput } from '../act/apply.ts';
import type { AgentConfig } from '../config/config.ts';
import { formatDiagnostic } from '../diagnostic.ts';
import { fanOut, type EventSink } from '../events/events.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { group, version, type SchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import { setCondition, type Condition } from '../status/conditions.ts';
import type { CreateJournal } from '../status/create-journal.ts';
import type { ResourceStatus, StateStore } from '../status/store.ts';
import { ClockedCounters, formatCalls, type KubeCalls } from './call-counts.ts';
import { kubeEventSink } from './event-sink.ts';
import { rewatchOnError } from '../kube/rewatch.ts';
import { setFinalizer } from './finalizers.ts';
import { namespacedKinds, type WatchedKind } from './kinds.ts';
import { addressOfObject, finalizer, isDeleting, type KubeObject } from './objects.ts';
import { deleteNamespaceProject } from './project-cleanup.ts';
import { documentsOf, revisionOf } from './revision.ts';
import { KubeStatusStore, type NamespaceObject } from './status-store.ts';
import { shardOf } from './shards.ts';
import { validateNamespace } from './validate-namespace.ts';
import { isAdminNamespace, memberRefusals, type MemberPolicyOptions } from '../policy/member-policy.ts';
import { subjectsOf } from '../policy/subjects.ts';
import { WorkQueue } from './work-queue.ts';
import { forgetDiskSources } from '../glance/registry-source.ts';
import { forgetResolutions } from '../kinds/image/oci.ts';
import { markAddressesMoved, specFollows, type MovedTag } from '../kinds/image/oci-follow.ts';
import { mergePatch } from '../kube/client.ts';
import { isKubeStatus } from '../kube/errors.ts';
import type { ValidatedRevision } from '../validate/validate.ts';

/**
 * Set by a replica that received a registry notification but does not lead:
 * the leader sees it change (its watch) and resolves the Image again at
 * once. Users may set it too (`kubectl annotate image NAME
 * kupenstack.io/resolve-requested-at=$(date -u +%FT%TZ) --overwrite`).
 */
export const resolveRequestedAt = 'kupenstack.io/resolve-requested-at';

export const projectLabel = 'kupenstack.io/project';

/** The engine entry point (agent/act/apply.ts applyRevision); injected so the loop does not care how a namespace is applied. */
export type ApplyRevision = (input: RevisionInput, deps: EngineDeps, opts: EngineOptions) => Promise<ApplyReport>;

export interface ControllerOptions {
  kc: k8s.KubeConfig;
  registry: SchemaRegistry;
  config: AgentConfig;
  /** The OpenStack client for a run; re-read when the cloud's Secret changes. */
  cloud: () => Promise<OpenStackCloud>;
  secrets: SecretResolver;
  engine: ApplyRevision;
  /** The label by which a namespace opts in (default `kupenstack.io/project=enabled`). */
  optInLabel?: { key: string; value: string };
  /** Namespaces reconciled whatever their labels; a namespace labelled `kupenstack.io/project=enabled` opts in too. */
  allowNamespaces?: string[];
  /** Drift correction and self-heal: every opted-in namespace is reconciled this often even without a change. */
  resyncMs: number;
  debounceMs: number;
  log: (line: string) => void;
  /** Extra subscribers to engine events (metrics, tests). */
  events?: EventSink;
  /** With several replicas: only the Lease holder acts; asked before each batch of writes (agent/controller/leader.ts). */
  leader?: { isLeader(): boolean };
  /**
   * Sharding (agent/controller/shard-set.ts): this replica acts on a namespace
   * only while it holds the Lease of the namespace's shard (label
   * kupenstack.io/shard, else defaultShard). A namespace relabelled into a
   * shard held here waits handoverMs before its first run, the time the old
   * shard's holder has to see the change and stop its run (see onNamespace).
   */
  sharding?: { defaultShard: string; holds(shard: string): boolean; handoverMs: number };
  /** Requests made to the API server (countKubeCalls on `kc`): logged after each run with the OpenStack calls, so an operator or a benchmark sees what a resync costs. */
  kubeCalls?: KubeCalls;
  /** OpenStack's admin-only fields in tenant namespaces (agent/policy/member-policy.ts): the cluster admin's allow-lists. */
  memberPolicy?: MemberPolicyOptions;
  /** Where creates in flight are recorded (controller/create-journal.ts): a run after a kill -9 or a Lease handover waits for what the dead process sent. */
  journal?: CreateJournal;
}

type Informer<T extends k8s.KubernetesObject> = k8s.Informer<T> & k8s.ObjectCache<T>;

/**
 * The in-cluster resource loop (DESIGN §9, loop 2): list+watch the namespaced
 * kinds cluster-wide, keep a cache per namespace, and reconcile one namespace
 * at a time with the same engine as standalone (namespace = project). A
 * status-only change (our own writes) never schedules a run; a spec,
 * deletion or label change does, after a short debounce.
 */
export class Controller {
  private readonly opts: ControllerOptions;
  private readonly kinds: WatchedKind[];
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly objects = new Map<string, Map<string, NamespaceObject>>();
  private readonly namespaces = new Map<string, k8s.V1Namespace>();
  /** Opted-in namespaces deleted whose project is not deleted yet. */
  private readonly gone = new Set<string>();
  /** Engine state the status subresource cannot hold (heal episodes), per address. */
  private readonly memory = new Map<string, ResourceStatus>();
  private readonly informers: Informer<k8s.KubernetesObject>[] = [];
  private readonly queue: WorkQueue;
  private resync?: NodeJS.Timeout;
  private stopped = false;
  /** Events recorded lately, so a repeating failure is not one Event per resync. */
  private readonly recentEvents = new Map<string, number>();
  /** Runs done, per namespace (tests and metrics). */
  readonly runs = new Map<string, number>();
  /** Aborted when leadership is lost: the engine's OpenStack calls in flight stop. */
  private leadership = new AbortController();
  /** When the first change not yet reconciled was seen, per namespace: the start of the latency a run's `timing` line breaks down. */
  private readonly changedAt = new Map<string, number>();
  /** The shard of each namespace as last seen (kept after its deletion, for the project's cleanup). */
  private readonly shardOfNamespace = new Map<string, string>();
  /** The run in flight per namespace, aborted when its shard is lost or the namespace moves to another shard. */
  private readonly runAborts = new Map<string, AbortController>();
  /** Namespaces moved into a shard held here: not reconciled before this time (handover). */
  private readonly notBefore = new Map<string, number>();
  /** The run in flight per namespace: when it started and the last step it passed (the resync names a run that takes too long). */
  private readonly inFlight = new Map<string, { since: number; step: string }>();
  /** Images a registry notification (or the resolve annotation) named, per namespace: its next run applies them first, alone. */
  private readonly movedImages = new Map<string, Set<string>>();

  constructor(opts: ControllerOptions) {
    this.opts = opts;
    this.kinds = namespacedKinds(opts.registry);
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
    this.queue = new WorkQueue({ debounceMs: opts.debounceMs, backoffBaseMs: 2_000, backoffMaxMs: 300_000, concurrency: Math.max(1, Math.min(4, opts.config.concurrency)) }, (ns) => this.reconcileNamespace(ns));
  }

  async start(): Promise<void> {
    const nsInformer = k8s.makeInformer(this.opts.kc, '/api/v1/namespaces', () => this.core.listNamespace());
    nsInformer.on('add', (ns) => this.onNamespace(ns));
    nsInformer.on('update', (ns) => this.onNamespace(ns));
    nsInformer.on('delete', (ns) => this.onNamespaceGone(ns.metadata?.name ?? ''));
    this.keepWatching(nsInformer, 'namespaces');
    for (const kind of this.kinds) {
      const informer = k8s.makeInformer<KubeObject & k8s.KubernetesObject>(this.opts.kc, `/apis/${group}/${version}/${kind.plural}`, async () => (await this.custom.listClusterCustomObject({ group, version, plural: kind.plural })) as k8s.KubernetesListObject<KubeObject & k8s.KubernetesObject>);
      informer.on('add', (o) => this.onObject(kind, o, 'add'));
      informer.on('update', (o) => this.onObject(kind, o, 'update'));
      informer.on('delete', (o) => this.onObject(kind, o, 'delete'));
      this.keepWatching(informer, kind.plural);
    }
    await Promise.all([nsInformer.start(), ...this.informers.filter((i) => i !== nsInformer).map((i) => i.start())]);
    this.opts.log(`watching ${this.kinds.length} kinds; namespaces opt in with ${projectLabel}=enabled${this.opts.allowNamespaces?.length ? ` or by --namespace (${this.opts.allowNamespaces.join(', ')})` : ''}`);
    for (const ns of this.namespaces.keys()) if (this.enabled(ns)) this.queue.add(ns);
    this.resync = setInterval(() => {
      const due = [...this.namespaces.keys()].filter((ns) => this.enabled(ns) && (!this.opts.sharding || this.acting(ns)));
      this.opts.log(`resync  ${due.length} namespaces`);
      // A run that never ends holds its namespace (the queue runs a key once at a time): say where it is.
      for (const [ns, run] of this.inFlight) if (Date.now() - run.since > 60_000) this.opts.log(`slow    run of ${ns} still going after ${Math.round((Date.now() - run.since) / 1000)} s, last step: ${run.step}`);
      for (const ns of due) this.queue.add(ns, 0, true);
    }, this.opts.resyncMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resync) clearInterval(this.resync);
    this.queue.stop();
    await Promise.all(this.informers.map((i) => i.stop().catch(() => {})));
  }

  /** Leadership gained: every opted-in namespace is reconciled (what came while following was skipped). */
  startedLeading(): void {
    this.opts.log('leading: reconciling every opted-in namespace');
    for (const ns of this.namespaces.keys()) if (this.enabled(ns)) this.queue.add(ns, 0);
    for (const ns of this.gone) this.queue.add(ns, 0);
  }

  /** Leadership lost: stop the run in flight and forget what only a leader may know (heal episodes, Events sent); the watch caches stay, they mirror the API server. */
  stoppedLeading(): void {
    this.opts.log('not leading any more: stopping the run in flight, caches reset');
    this.leadership.abort(new Error('leadership lost'));
    this.leadership = new AbortController();
    this.memory.clear();
    this.recentEvents.clear();
    // Process-wide: resolved image tags and registry clients; the next leadership resolves and authenticates afresh.
    forgetResolutions();
    forgetDiskSources();
  }

  /** A shard's Lease gained: its namespaces are reconciled (what came while another held it was theirs). */
  shardGained(shard: string): void {
    const due = [...this.namespaces.keys()].filter((ns) => this.enabled(ns) && this.shardOf(ns) === shard);
    this.opts.log(`shard   ${shard} gained: reconciling its ${due.length} namespaces`);
    for (const ns of due) this.queue.add(ns, 0);
    for (const ns of this.gone) if (this.shardOf(ns) === shard) this.queue.add(ns, 0);
  }

  /** A shard's Lease lost or handed over: its runs in flight stop, and what only its holder may know is forgotten. */
  shardLost(shard: string): void {
    this.opts.log(`shard   ${shard} lost: stopping its runs in flight`);
    for (const [ns, abort] of this.runAborts) if (this.shardOf(ns) === shard) abort.abort(new Error(`shard ${shard} lost`));
    for (const address of this.memory.keys()) if (this.shardOf(address.split('/')[0]!) === shard) this.memory.delete(address);
    this.recentEvents.clear();
  }

  private shardOf(ns: string): string {
    const sharding = this.opts.sharding;
    if (!sharding) return '';
    const live = this.namespaces.get(ns);
    return live ? shardOf(live.metadata?.labels, sharding.defaultShard) : (this.shardOfNamespace.get(ns) ?? sharding.defaultShard);
  }

  /** True when this replica may write for `ns` (no leader election, or it holds the Lease, and the Lease of the namespace's shard). */
  private acting(ns?: string): boolean {
    if (this.opts.leader && !this.opts.leader.isLeader()) return false;
    if (!this.opts.sharding || ns === undefined) return true;
    return this.opts.sharding.holds(this.shardOf(ns));
  }

  /** A namespace's labels as the watch has them (the egress policy's rules select namespaces by label; tenants cannot label their namespace). */
  labelsOf(ns: string): Record<string, string> {
    return this.namespaces.get(ns)?.metadata?.labels ?? {};
  }

  /** Resolves when no namespace is scheduled or running (tests). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private keepWatching(informer: Informer<k8s.KubernetesObject>, what: string): void {
    this.informers.push(informer);
    rewatchOnError(informer, what, this.opts.log, () => this.stopped);
  }

  /**
   * A registry notification (registry-hook.ts): the Image objects of
   * opted-in namespaces whose spec follows one of the pushed tags, read from
   * the watch cache (no registry or API request).
   */
  imagesFollowing(pushes: readonly MovedTag[]): string[] {
    const out: string[] = [];
    for (const [ns, bucket] of this.objects) {
      if (!this.enabled(ns)) continue;
      for (const [address, entry] of bucket) if (entry.kind.kind === 'Image' && !isDeleting(entry.object) && specFollows(entry.object.spec, pushes)) out.push(address);
    }
    return out.sort();
  }

  /**
   * Resolves these Images again now, whatever their interval. The leader
   * marks them moved and reconciles their namespaces at once (status and
   * Events on each Image as in any run); a follower, which may not act,
   * annotates them (resolveRequestedAt) so the leader does it.
   */
  async resolveAgain(addresses: readonly string[]): Promise<void> {
    if (this.acting()) {
      markAddressesMoved(this.opts.config.owner, addresses);
      this.noteMoved(addresses);
      for (const ns of new Set(addresses.map((a) => a.split('/')[0]!))) {
        if (!this.changedAt.has(ns)) this.changedAt.set(ns, Date.now());
        this.queue.add(ns, 0);
      }
      return;
    }
    const at = new Date().toISOString();
    for (const address of addresses) {
      const [ns, , name] = address.split('/');
      const entry = this.objects.get(ns!)?.get(address);
      if (!entry) continue;
      try {
        await this.custom.patchNamespacedCustomObject({ group, version, namespace: ns!, plural: entry.kind.plural, name: name!, body: { metadata: { annotations: { [resolveRequestedAt]: at } } } }, mergePatch);
      } catch (err) {
        if (!isKubeStatus(err, 404)) throw err;
      }
    }
  }

  private noteMoved(addresses: readonly string[]): void {
    for (const address of addresses) {
      const ns = address.split('/')[0]!;
      this.movedImages.set(ns, (this.movedImages.get(ns) ?? new Set<string>()).add(address));
    }
  }

  private enabled(ns: string): boolean {
    if (this.opts.allowNamespaces?.includes(ns)) return this.namespaces.has(ns);
    const { key, value } = this.opts.optInLabel ?? { key: projectLabel, value: 'enabled' };
    return this.namespaces.get(ns)?.metadata?.labels?.[key] === value;
  }

  private onNamespace(ns: k8s.V1Namespace): void {
    const name = ns.metadata?.name;
    if (!name) return;
    const old = this.namespaces.get(name);
    this.namespaces.set(name, ns);
    const key = this.opts.optInLabel?.key ?? projectLabel;
    const was = old?.metadata?.labels?.[key];
    const terminating = ns.metadata?.deletionTimestamp !== undefined && old?.metadata?.deletionTimestamp === undefined;
    if (this.opts.sharding) this.onShardOf(name, old);
    if (this.enabled(name) && (!old || was !== ns.metadata?.labels?.[key] || terminating)) this.queue.add(name);
  }

  /**
   * A namespace whose shard label changed. The holder of the old shard aborts
   * its run in flight at once (its OpenStack calls stop) and starts no other;
   * the holder of the new shard waits handoverMs (the lease duration) after
   * it saw the change before its first run. Both see the same watch event, so
   * the old holder has stopped before the new one starts unless its watch lags
   * by more than that — the same bound a dead holder's Lease gives.
   */
  private onShardOf(name: string, old: k8s.V1Namespace | undefined): void {
    const sharding = this.opts.sharding!;
    const now = this.shardOf(name);
    const was = old ? shardOf(old.metadata?.labels, sharding.defaultShard) : this.shardOfNamespace.get(name);
    this.shardOfNamespace.set(name, now);
    if (was === undefined || was === now) return;
    if (sharding.holds(was) && !sharding.holds(now)) {
      this.opts.log(`shard   ${name} moved from shard ${was} to ${now}: stopping its run here`);
      this.runAborts.get(name)?.abort(new Error(`namespace ${name} moved to shard ${now}`));
    } else if (sharding.holds(now) && !sharding.holds(was)) {
      this.opts.log(`shard   ${name} moved from shard ${was} to ${now}: reconciling here after ${sharding.handoverMs} ms`);
      this.notBefore.set(name, Date.now() + sharding.handoverMs);
    }
  }

  /** A deleted namespace's project is emptied and deleted even when no object held the namespace back (it had none). */
  private onNamespaceGone(name: string): void {
    const was = this.enabled(name);
    this.namespaces.delete(name);
    if (!was) return;
    this.gone.add(name);
    this.queue.add(name);
  }

  private onObject(kind: WatchedKind, o: KubeObject, event: 'add' | 'update' | 'delete'): void {
    const ns = o.metadata.namespace;
    if (!ns) return;
    const address = addressOfObject(kind.kind, o);
    const bucket = this.objects.get(ns) ?? new Map<string, NamespaceObject>();
    this.objects.set(ns, bucket);
    const old = bucket.get(address)?.object;
    if (event === 'delete') bucket.delete(address);
    else bucket.set(address, { kind, object: o });
    if (!this.enabled(ns)) return;
    const requested = event === 'update' && old !== undefined && o.metadata.annotations?.[resolveRequestedAt] !== undefined && old.metadata.annotations?.[resolveRequestedAt] !== o.metadata.annotations[resolveRequestedAt];
    // Asked to resolve again (a follower got a registry notification, or a user): due now whatever its interval.
    if (requested) {
      markAddressesMoved(this.opts.config.owner, [address]);
      this.noteMoved([address]);
    }
    // Our own status writes change only status (generation stays): they must not schedule a run.
    const matters = requested || event !== 'update' || !old || old.metadata.generation !== o.metadata.generation || isDeleting(old) !== isDeleting(o) || !o.metadata.finalizers?.includes(finalizer);
    if (!matters) return;
    if (!this.changedAt.has(ns)) this.changedAt.set(ns, Date.now());
    this.queue.add(ns);
  }

  private async reconcileNamespace(ns: string): Promise<void> {
    const cleanup = this.gone.has(ns) && !this.namespaces.has(ns);
    if (!cleanup && !this.enabled(ns)) return;
    if (!this.acting(ns)) return;
    const wait = (this.notBefore.get(ns) ?? 0) - Date.now();
    if (wait > 0) {
      // Not through queue.add now: while this key runs that would only mark it dirty and rerun it after the debounce.
      setTimeout(() => this.queue.add(ns, 0), wait).unref();
      return;
    }
    this.notBefore.delete(ns);
    this.inFlight.set(ns, { since: Date.now(), step: 'reading its shard label' });
    const abort = new AbortController();
    try {
      if (this.opts.sharding && !cleanup && !(await this.freshShardIsHeld(ns))) {
        this.opts.log(`shard   ${ns}: not run here, the API server says its shard is not held here`);
        return;
      }
      this.runAborts.set(ns, abort);
      this.inFlight.get(ns)!.step = 'start';
      await this.reconcileHeld(ns, cleanup, AbortSignal.any([this.leadership.signal, abort.signal]));
    } catch (err) {
      // The queue retries with backoff and says nothing: a run that throws before its `reconciled` line must not fail silently.
      this.opts.log(`failed  run of ${ns} at ${this.inFlight.get(ns)?.step ?? 'start'}: ${(err as Error).message}`);
      throw err;
    } finally {
      this.inFlight.delete(ns);
      if (this.runAborts.get(ns) === abort) this.runAborts.delete(ns);
    }
  }

  /** The namespace's shard label as the API server has it now (not as the watch last showed it): a run starts only in the shard held here. */
  private async freshShardIsHeld(ns: string): Promise<boolean> {
    try {
      const live = await this.core.readNamespace({ name: ns });
      const shard = shardOf(live.metadata?.labels, this.opts.sharding!.defaultShard);
      return this.opts.sharding!.holds(shard);
    } catch (err) {
      // Gone meanwhile: its deletion event comes through the watch and schedules the cleanup. Anything else is said: the run is skipped.
      if (!isKubeStatus(err, 404)) this.opts.log(`shard   ${ns}: could not read the namespace, not run now: ${(err as Error).message}`);
      return false;
    }
  }

  private async reconcileHeld(ns: string, cleanup: boolean, signal: AbortSignal): Promise<void> {
    const started = Date.now();
    const changedAt = this.changedAt.get(ns);
    this.changedAt.delete(ns);
    const marks: [string, number][] = [];
    const mark = (what: string): void => {
      marks.push([what, Date.now()]);
      const run = this.inFlight.get(ns);
      if (run) run.step = what;
    };
    const terminating = cleanup || this.namespaces.get(ns)?.metadata?.deletionTimestamp !== undefined;
    const entries = new Map(this.objects.get(ns) ?? []);
    const log = this.opts.log;

    // Finalizers first, before anything exists in OpenStack (ORC): a CR deleted from now on waits for its object.
    for (const [address, entry] of entries) {
      if (isDeleting(entry.object)) continue;
      if (!this.acting(ns)) return;
      const updated = await setFinalizer(this.custom, entry.kind.plural, entry.object, finalizer, true);
      if (updated) entry.object = { ...updated };
      else entries.delete(address);
    }
    mark('finalizers');

    // The engine's last event is the step a slow run is at (the resync names it).
    const progress: EventSink = (e) => {
      const run = this.inFlight.get(ns);
      if (run) run.step = `${e.type} ${e.address}`;
      // A run held back for creates a dead process sent names no object (no Event): the log says why it waits.
      if (e.type === 'held' && e.reason === 'CreatesInFlight') log(`held    ${ns}: ${e.message}`);
    };
    const events = fanOut(progress, kubeEventSink(this.core, (a) => entries.get(a) && { kind: entries.get(a)!.kind.kind, object: entries.get(a)!.object }, log, this.recentEvents), ...(this.opts.events ? [this.opts.events] : []));
    // A terminating namespace declares nothing any more, even before Kubernetes has marked each object deleted: its project is emptied.
    const documents = terminating ? [] : documentsOf([...entries.values()].map((e) => ({ kind: e.kind.kind, object: e.object })));
    // OpenStack's admin-only fields, refused in a tenant namespace before validation: what references a refused object is refused in turn.
    const refused = memberRefusals(subjectsOf(documents), isAdminNamespace(this.namespaces.get(ns)?.metadata?.labels), this.opts.memberPolicy ?? { flavorExtraSpecs: [] });
    const { validated, rejected } = validateNamespace(documents.filter((d) => !refused.has(d.file)), this.opts.registry);
    const revision = revisionOf(ns, [...entries.values()].map((e) => e.object));
    const kubeStore = new KubeStatusStore(this.custom, ns, entries, this.memory, log, new Set([...rejected.keys(), ...refused.keys()]));
    // Status writes too are a leader's: a demoted replica writes nothing.
    const store = {
      load: () => kubeStore.load(),
      putResource: (address: string, state: ResourceStatus | undefined) => (this.acting(ns) ? kubeStore.putResource(address, state) : Promise.resolve()),
      finishRun: (run: Parameters<KubeStatusStore['finishRun']>[0]) => kubeStore.finishRun(run),
    };
    for (const [address, diagnostics] of rejected) await this.reject(address, diagnostics.map(formatDiagnostic).join('; '), entries, store, events, revision);
    for (const [address, messages] of refused) await this.reject(address, messages.join('; '), entries, store, events, revision, 'AdminOnly');
    mark('validated');

    const cloud = await this.opts.cloud();
    if (!this.acting(ns)) return;
    mark('cloud');
    // With several namespaces running at once a write of another may be taken for this run's first: the timing is exact on a quiet controller.
    const clocked = cloud.counters instanceof ClockedCounters ? cloud.counters : undefined;
    let firstWrite: number | undefined;
    const onWrite = (at: number): void => void (firstWrite ??= at);
    clocked?.onWrite.add(onWrite);
    const deps: EngineDeps = { cloud, registry: this.opts.registry, config: this.opts.config, state: store, events, secrets: this.opts.secrets, counters: cloud.counters, namespaces: [ns], signal, ...(this.opts.journal ? { journal: this.opts.journal } : {}) };
    const moved = this.movedImages.get(ns);
    this.movedImages.delete(ns);
    if (moved && !terminating) await this.imagesFirst(ns, revision, validated, [...moved].sort(), deps, mark);
    // An invalid object may still have an OpenStack object from its last valid spec: the store marks it kept (as detached), so prune deletes only what was deleted in Kubernetes.
    const report = await this.opts.engine(
      { revision, validated },
      deps,
      // Every deletion here is a `kubectl delete` of that very object, an explicit act: the mass-delete guard is for files vanishing from Git.
      { prune: true, allowMassDelete: true },
    ).finally(() => clocked?.onWrite.delete(onWrite));
    mark('engine');
    if (firstWrite !== undefined) marks.push(['first write', firstWrite]);
    const failed = new Set(report.errors.map((e) => e.address));
    const deleting = [...entries].filter(([, e]) => isDeleting(e.object));
    const releasable = deleting.filter(([address]) => !failed.has(address));
    const emptied = terminating && report.errors.length === 0 && releasable.length === entries.size;
    if (!this.acting(ns)) return;
    if (emptied) {
      const id = await deleteNamespaceProject(cloud, this.opts.config.owner, ns);
      if (id) log(`delete  project of namespace ${ns} (${id})`);
      this.gone.delete(ns);
    }
    for (const [address, entry] of releasable) {
      await setFinalizer(this.custom, entry.kind.plural, entry.object, finalizer, false);
      entries.delete(address);
    }
    this.runs.set(ns, (this.runs.get(ns) ?? 0) + 1);
    log(`reconciled ${ns}${this.opts.sharding ? ` (shard ${this.shardOf(ns)})` : ''} at ${revision} in ${Date.now() - started} ms: ${report.created} created, ${report.updated} updated, ${report.deleted} deleted, ${report.healed} healed, ${report.unchanged} unchanged, ${report.errors.length} errors, ${rejected.size} rejected`);
    const since = changedAt ?? started;
    const steps = [...(changedAt !== undefined ? [['run start', started] as [string, number]] : []), ...marks].sort((a, b) => a[1] - b[1]);
    log(`timing  ${ns}: ${changedAt !== undefined ? 'from the change seen' : 'from the run start'} at ${new Date(since).toISOString()}: ${steps.map(([what, at]) => `${what} +${at - since} ms`).join(', ')}`);
    log(`calls   after ${ns}: ${formatCalls(cloud.counters, this.opts.kubeCalls ?? { list: 0, watch: 0, get: 0, write: 0 })}${this.opts.kubeCalls ? '' : ' (kubernetes not counted)'}`);
    if (report.errors.length > 0) throw new Error(`${report.errors.length} errors`);
  }

  /**
   * A tag moved (registry notification): the Images it named, and what they
   * need, are planned and applied alone before the namespace's full pass —
   * against the projects the last full pass saw, no prune — so the new
   * version is active without waiting for every kind of the namespace to be
   * listed. Only valid objects take part (a rejected Image is not in
   * `validated`). A failure is logged; the full pass right after does it
   * all again and reports it on the objects.
   */
  private async imagesFirst(ns: string, revision: string, validated: ValidatedRevision, addresses: string[], deps: EngineDeps, mark: (what: string) => void): Promise<void> {
    const only = subsetOf(validated, addresses);
    if (only.manifests.length === 0) {
      this.opts.log(`images  ${ns}: ${addresses.join(', ')} not applied first: none is a valid object of the namespace now`);
      return;
    }
    try {
      const r = await this.opts.engine({ revision, validated: only }, deps, { prune: false, allowMassDelete: false, partial: true });
      mark('images first');
      this.opts.log(`images  ${ns}: ${addresses.join(', ')} applied first (registry notification): ${r.created} created, ${r.updated} updated, ${r.unchanged} unchanged, ${r.errors.length} errors; the full pass follows`);
    } catch (err) {
      if (deps.signal?.aborted) throw err;
      this.opts.log(`images  ${ns}: applying ${addresses.join(', ')} first failed, the full pass follows: ${(err as Error).message}`);
    }
  }

  /** A Stalled object: what `kupenstack validate` says, once per generation as an Event, and nothing created from it. */
  private async reject(address: string, message: string, entries: Map<string, NamespaceObject>, store: StateStore, events: EventSink, revision: string, reason = 'InvalidSpec'): Promise<void> {
    const entry = entries.get(address);
    if (!entry) return;
    const previous = (entry.object.status?.conditions as { type: string; message?: string; observedGeneration?: number }[] | undefined)?.find((c) => c.type === 'Stalled');
    const now = new Date();
    const known = this.memory.get(address) ?? {};
    let conditions = setCondition<Condition>([], { type: 'Stalled', status: 'True', reason, message }, now);
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason, message }, now);
    conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason, message: 'waiting for a corrected spec' }, now);
    await store.putResource(address, { ...known, conditions });
    if (previous?.message !== message || previous.observedGeneration !== entry.object.metadata.generation) {
      events({ type: 'rejected', address, kind: entry.kind.kind, reason, message, severity: 'warning', revision, at: now.toISOString() });
    }
  }
}
