import * as k8s from '@kubernetes/client-node';
import { specFollows, type MovedTag } from '../../hooks/registry-match.ts';
import { ImageMemory } from '../../kinds/kit/image-memory.ts';
import { mergePatch } from '../../kube/client.ts';
import { isKubeStatus } from '../../kube/errors.ts';
import { rewatchOnError } from '../../kube/rewatch.ts';
import { group, version } from '../../schema/registry.ts';
import type { ResourceStatus } from '../../status/store.ts';
import { namespacedKinds, type WatchedKind } from './kinds.ts';
import type { ControllerOptions } from '../options.ts';
import { runNamespace, type NamespaceRunHost } from './namespace-run.ts';
import { pauseAnnotation, pausedBy } from './paused.ts';
import { addressOfObject, finalizer, isDeleting, type KubeObject } from './objects.ts';
import { shardOf } from '../leases/shards.ts';
import type { NamespaceObject } from './status-store.ts';
import { WorkQueue } from './work-queue.ts';
import { CloudUnreachableError, connectionOf } from '../../kinds/openstackcloudconnection/index.ts';
import type { OpenStackCloud } from '../../openstack/cloud.ts';

/**
 * Set by a replica that received a registry notification but does not lead:
 * the leader sees it change (its watch) and resolves the Image again at
 * once. Users may set it too (`kubectl annotate image NAME
 * kupenstack.io/resolve-requested-at=$(date -u +%FT%TZ) --overwrite`).
 */
const resolveRequestedAt = 'kupenstack.io/resolve-requested-at';

const projectLabel = 'kupenstack.io/project';

type Informer<T extends k8s.KubernetesObject> = k8s.Informer<T> & k8s.ObjectCache<T>;

/**
 * The in-cluster resource loop (ORC's job: the custom resources the Sync loop or
 * `kubectl` wrote → OpenStack, under the same RBAC either way): list+watch the namespaced
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
  /** Every watch has listed: before that a namespace's objects may be missing from the cache, and a run would see them as deleted. */
  private synced = false;
  /** Events recorded lately, so a repeating failure is not one Event per resync. */
  private readonly recentEvents = new Map<string, number>();
  /** Runs done, per namespace (tests and metrics). */
  readonly runs = new Map<string, number>();
  /** Namespaces whose full pass ran in this leadership (namespace-run.ts: only they get targeted runs). */
  private readonly fullyRun = new Set<string>();
  /** Objects created or changed since their namespace's run was scheduled, when nothing else scheduled it: its run is targeted at them. */
  private readonly targets = new Map<string, Set<string>>();
  /** Namespaces scheduled for a full pass (anything but an object's spec change): no targeted run until it ran. */
  private readonly fullDue = new Set<string>();
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
  /**
   * Images a registry notification (or the resolve annotation) named, per
   * namespace: the one record of what moved. Its next run applies them first,
   * alone, and hands them to the engine as `refresh`; a run that fails gives
   * back those it did not resolve again.
   */
  private readonly movedImages = new Map<string, Set<string>>();
  /** What the Image kind remembers between runs (resolutions, registry clients): this leadership's, dropped when it ends. */
  private images: ImageMemory;
  /** The connection of each namespace as last seen (label kupenstack.io/cloud; kept after its deletion, for the project's cleanup in that cloud). */
  private readonly connectionOfNamespace = new Map<string, string | undefined>();
  /** The last CloudUnreachable Event per namespace: one per outage and reason, not one per retry. */
  private readonly cloudDownEvents = new Map<string, string>();

  /** What one namespace's run (namespace-run.ts) reads and writes of this controller. */
  private readonly host: NamespaceRunHost;

  constructor(opts: ControllerOptions) {
    this.opts = opts;
    this.images = new ImageMemory(opts.imageGate);
    this.kinds = namespacedKinds(opts.registry);
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
    this.host = {
      opts,
      custom: this.custom,
      core: this.core,
      memory: this.memory,
      recentEvents: this.recentEvents,
      gone: this.gone,
      runs: this.runs,
      fullyRun: this.fullyRun,
      // Read at each run: a new leadership brings a new one.
      images: () => this.images,
      acting: (ns) => this.acting(ns),
      step: (ns, what) => {
        const run = this.inFlight.get(ns);
        if (run) run.step = what;
      },
      shardOf: (ns) => this.shardOf(ns),
      labelsOf: (ns) => this.labelsOf(ns),
      pausedBy: (ns) => pausedBy(this.namespaces.get(ns)?.metadata?.annotations),
      cloudOf: (ns) => this.cloudOf(ns),
    };
    const workers = opts.namespaceWorkers ?? Math.max(1, Math.min(4, opts.config.concurrency));
    // The leading edge (issue 33): a lone `kubectl apply` runs at once, not after the debounce window.
    this.queue = new WorkQueue({ debounceMs: opts.debounceMs, leadingMs: 5, backoffBaseMs: 2_000, backoffMaxMs: 300_000, concurrency: workers }, (ns, run) =>
      this.reconcileNamespace(ns, run.leading),
    );
  }

  async start(): Promise<void> {
    const nsInformer = k8s.makeInformer(this.opts.kc, '/api/v1/namespaces', () => this.core.listNamespace());
    nsInformer.on('add', (ns) => this.onNamespace(ns));
    nsInformer.on('update', (ns) => this.onNamespace(ns));
    nsInformer.on('delete', (ns) => this.onNamespaceGone(ns.metadata?.name ?? ''));
    this.keepWatching(nsInformer, 'namespaces');
    for (const kind of this.kinds) {
      const informer = k8s.makeInformer<KubeObject & k8s.KubernetesObject>(
        this.opts.kc,
        `/apis/${group}/${version}/${kind.plural}`,
        async () =>
          (await this.custom.listClusterCustomObject({ group, version, plural: kind.plural })) as k8s.KubernetesListObject<KubeObject & k8s.KubernetesObject>,
      );
      informer.on('add', (o) => this.onObject(kind, o, 'add'));
      informer.on('update', (o) => this.onObject(kind, o, 'update'));
      informer.on('delete', (o) => this.onObject(kind, o, 'delete'));
      this.keepWatching(informer, kind.plural);
    }
    await Promise.all([nsInformer.start(), ...this.informers.filter((i) => i !== nsInformer).map((i) => i.start())]);
    // Runs asked for while the lists were still arriving were dropped (reconcileNamespace); the loop below schedules them all.
    this.synced = true;
    this.opts.log(
      `watching ${this.kinds.length} kinds; namespaces opt in with ${projectLabel}=enabled${this.opts.allowNamespaces?.length ? ` or by --namespace (${this.opts.allowNamespaces.join(', ')})` : ''}`,
    );
    for (const ns of this.namespaces.keys()) if (this.enabled(ns)) this.schedule(ns);
    this.resync = setInterval(() => {
      const due = [...this.namespaces.keys()].filter((ns) => this.enabled(ns) && (!this.opts.sharding || this.acting(ns)));
      this.opts.log(`resync  ${due.length} namespaces`);
      // A run that never ends holds its namespace (the queue runs a key once at a time): say where it is.
      for (const [ns, run] of this.inFlight)
        if (Date.now() - run.since > 60_000)
          this.opts.log(`slow    run of ${ns} still going after ${Math.round((Date.now() - run.since) / 1000)} s, last step: ${run.step}`);
      for (const ns of due) this.schedule(ns, 0, true);
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
    for (const ns of this.namespaces.keys()) if (this.enabled(ns)) this.schedule(ns, 0);
    for (const ns of this.gone) this.schedule(ns, 0);
  }

  /** Leadership lost: stop the run in flight and forget what only a leader may know (heal episodes, Events sent); the watch caches stay, they mirror the API server. */
  stoppedLeading(): void {
    this.opts.log('not leading any more: stopping the run in flight, caches reset');
    this.leadership.abort(new Error('leadership lost'));
    this.leadership = new AbortController();
    this.memory.clear();
    this.recentEvents.clear();
    this.fullyRun.clear();
    // Resolved image tags and registry clients: the next leadership resolves and authenticates afresh.
    this.images = new ImageMemory(this.opts.imageGate);
  }

  /** A shard's Lease gained: its namespaces are reconciled (what came while another held it was theirs). */
  shardGained(shard: string): void {
    const due = [...this.namespaces.keys()].filter((ns) => this.enabled(ns) && this.shardOf(ns) === shard);
    this.opts.log(`shard   ${shard} gained: reconciling its ${due.length} namespaces`);
    for (const ns of due) this.schedule(ns, 0);
    for (const ns of this.gone) if (this.shardOf(ns) === shard) this.schedule(ns, 0);
  }

  /** A shard's Lease lost or handed over: its runs in flight stop, and what only its holder may know is forgotten. */
  shardLost(shard: string): void {
    this.opts.log(`shard   ${shard} lost: stopping its runs in flight`);
    for (const [ns, abort] of this.runAborts) if (this.shardOf(ns) === shard) abort.abort(new Error(`shard ${shard} lost`));
    for (const address of this.memory.keys()) if (this.shardOf(address.split('/')[0]!) === shard) this.memory.delete(address);
    for (const ns of this.fullyRun) if (this.shardOf(ns) === shard) this.fullyRun.delete(ns);
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
      for (const [address, entry] of bucket)
        if (entry.kind.kind === 'Image' && !isDeleting(entry.object) && specFollows(entry.object.spec, pushes)) out.push(address);
    }
    return out.sort();
  }

  /**
   * Resolves these Images again now, whatever their interval. The leader
   * notes them moved and reconciles their namespaces at once (status and
   * Events on each Image as in any run); a follower, which may not act,
   * annotates them (resolveRequestedAt) so the leader does it.
   */
  async resolveAgain(addresses: readonly string[]): Promise<void> {
    if (this.acting()) {
      this.noteMoved(addresses);
      for (const ns of new Set(addresses.map((a) => a.split('/')[0]!))) {
        if (!this.changedAt.has(ns)) this.changedAt.set(ns, Date.now());
        this.schedule(ns, 0);
      }
      return;
    }
    const at = new Date().toISOString();
    for (const address of addresses) {
      const [ns, , name] = address.split('/');
      const entry = this.objects.get(ns!)?.get(address);
      if (!entry) continue;
      try {
        await this.custom.patchNamespacedCustomObject(
          { group, version, namespace: ns!, plural: entry.kind.plural, name: name!, body: { metadata: { annotations: { [resolveRequestedAt]: at } } } },
          mergePatch,
        );
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
    const moved = this.onConnectionOf(name, old);
    // A pause set or lifted runs the namespace at once: drift reported, or corrected.
    const pauseChanged = old?.metadata?.annotations?.[pauseAnnotation] !== ns.metadata?.annotations?.[pauseAnnotation];
    if (this.enabled(name) && (!old || was !== ns.metadata?.labels?.[key] || terminating || pauseChanged || moved)) this.schedule(name);
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

  /**
   * The namespace's connection as its label now says. A namespace the admin moves to another cloud
   * stops its run in flight, forgets what its runs learnt of the old cloud (heal episodes, the full
   * pass seen) and runs against the new one; the old cloud's project is left as it is.
   */
  private onConnectionOf(name: string, old: k8s.V1Namespace | undefined): boolean {
    const now = connectionOf(this.namespaces.get(name)?.metadata?.labels);
    const was = old ? connectionOf(old.metadata?.labels) : this.connectionOfNamespace.get(name);
    this.connectionOfNamespace.set(name, now);
    if (!old || was === now) return false;
    this.opts.log(`cloud   ${name} moved from ${was ?? 'the default cloud'} to ${now ?? 'the default cloud'}`);
    this.runAborts.get(name)?.abort(new Error(`namespace ${name} moved to ${now ?? 'the default cloud'}`));
    for (const address of this.memory.keys()) if (address.split('/')[0] === name) this.memory.delete(address);
    this.fullyRun.delete(name);
    return true;
  }

  /** The OpenStack client of a namespace's cloud: its connection's, else the default cloud (the flags). */
  cloudOf(ns: string): Promise<OpenStackCloud> {
    const name = this.namespaces.has(ns) ? connectionOf(this.labelsOf(ns)) : this.connectionOfNamespace.get(ns);
    if (name === undefined) return this.opts.cloud();
    if (!this.opts.connections)
      return Promise.reject(
        new CloudUnreachableError(name, 'NoSuchConnection', 'this controller reconciles the default cloud only (its resource loop runs without connections)'),
      );
    return this.opts.connections.cloudOf(name);
  }

  /** A connection's cloud answers again: its namespaces run now, whatever their backoff. */
  connectionUp(connection: string): void {
    for (const ns of [...this.cloudDownEvents.keys()]) if (this.connectionOfNamespace.get(ns) === connection) this.cloudDownEvents.delete(ns);
    for (const ns of this.namespaces.keys()) if (this.enabled(ns) && this.connectionOfNamespace.get(ns) === connection) this.schedule(ns, 0);
  }

  /** A connection's cloud went down: the runs in flight of its namespaces stop (their calls would wait out their timeouts). */
  connectionDown(connection: string, error: Error): void {
    for (const [ns, abort] of this.runAborts) if (this.connectionOfNamespace.get(ns) === connection) abort.abort(error);
  }

  /** A deleted namespace's project is emptied and deleted even when no object held the namespace back (it had none). */
  private onNamespaceGone(name: string): void {
    const was = this.enabled(name);
    this.namespaces.delete(name);
    if (!was) return;
    this.gone.add(name);
    this.schedule(name);
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
    const requested =
      event === 'update' &&
      old !== undefined &&
      o.metadata.annotations?.[resolveRequestedAt] !== undefined &&
      old.metadata.annotations?.[resolveRequestedAt] !== o.metadata.annotations[resolveRequestedAt];
    // Asked to resolve again (a follower got a registry notification, or a user): due now whatever its interval.
    if (requested) this.noteMoved([address]);
    // Our own status writes change only status (generation stays): they must not schedule a run.
    const matters =
      requested ||
      event !== 'update' ||
      !old ||
      old.metadata.generation !== o.metadata.generation ||
      isDeleting(old) !== isDeleting(o) ||
      !o.metadata.finalizers?.includes(finalizer);
    if (!matters) return;
    if (!this.changedAt.has(ns)) this.changedAt.set(ns, Date.now());
    // A spec created or changed is a targeted run's; a deletion, a finalizer or a resolve request needs the full pass.
    const spec = !requested && event !== 'delete' && !isDeleting(o) && (event === 'add' || !old || old.metadata.generation !== o.metadata.generation);
    this.schedule(ns, undefined, false, spec ? address : undefined);
  }

  /**
   * Schedules a namespace's run (work-queue.ts), recording why: an object's
   * spec (`target`) makes a targeted run unless anything else scheduled the
   * full pass since its last run. Runs the queue schedules on its own (a
   * requeue, a retry) are full passes too (reconcileHeld).
   */
  private schedule(ns: string, delayMs?: number, background = false, target?: string): void {
    if (target === undefined) {
      this.fullDue.add(ns);
      this.targets.delete(ns);
    } else if (!this.fullDue.has(ns)) this.targets.set(ns, (this.targets.get(ns) ?? new Set<string>()).add(target));
    this.queue.add(ns, delayMs, background);
  }

  /** One namespace's run; answers when to run it again while OpenStack still works on its objects. */
  private async reconcileNamespace(ns: string, leading: boolean): Promise<number | undefined> {
    if (!this.synced) return undefined;
    const cleanup = this.gone.has(ns) && !this.namespaces.has(ns);
    if (!cleanup && !this.enabled(ns)) return undefined;
    if (!this.acting(ns)) return undefined;
    const wait = (this.notBefore.get(ns) ?? 0) - Date.now();
    if (wait > 0) {
      // Not through queue.add now: while this key runs that would only mark it dirty and rerun it after the debounce.
      setTimeout(() => this.queue.add(ns, 0), wait).unref();
      return undefined;
    }
    this.notBefore.delete(ns);
    this.inFlight.set(ns, { since: Date.now(), step: 'reading its shard label' });
    const abort = new AbortController();
    const deadline = this.runDeadline(ns, abort);
    try {
      if (this.opts.sharding && !cleanup && !(await this.freshShardIsHeld(ns))) {
        this.opts.log(`shard   ${ns}: not run here, the API server says its shard is not held here`);
        return undefined;
      }
      this.runAborts.set(ns, abort);
      this.inFlight.get(ns)!.step = 'start';
      const after = await this.reconcileHeld(ns, cleanup, leading, AbortSignal.any([this.leadership.signal, abort.signal]));
      // Cut at its deadline after its last safe point (the engine recorded the object in flight as failed): still a cut run, retried with backoff.
      if (deadline && abort.signal.reason === deadline.reason) throw deadline.reason;
      return after;
    } catch (err) {
      const cut = abort.signal.aborted && abort.signal.reason === deadline?.reason ? deadline?.reason : undefined;
      // The queue retries with backoff and says nothing: a run that throws before its `reconciled` line must not fail silently.
      this.opts.log(`${cut ? 'stalled' : 'failed '} run of ${ns} at ${this.inFlight.get(ns)?.step ?? 'start'}: ${(cut ?? (err as Error)).message}`);
      if (cut) this.namespaceEvent(ns, 'BoundExceeded', cut.message);
      if (err instanceof CloudUnreachableError && this.cloudDownEvents.get(ns) !== err.message) {
        this.cloudDownEvents.set(ns, err.message);
        this.namespaceEvent(ns, 'CloudUnreachable', err.message);
      }
      throw cut ?? err;
    } finally {
      if (deadline) clearTimeout(deadline.timer);
      this.inFlight.delete(ns);
      if (this.runAborts.get(ns) === abort) this.runAborts.delete(ns);
    }
  }

  /** The run's deadline (--run-deadline): aborts the run with the bound's error, which the engine stops on at its next safe point. */
  private runDeadline(ns: string, abort: AbortController): { timer: NodeJS.Timeout; reason: Error } | undefined {
    const bound = this.opts.runDeadline;
    if (!bound) return undefined;
    const reason = bound.error(ns);
    const timer = setTimeout(() => abort.abort(reason), bound.ms);
    timer.unref();
    return { timer, reason };
  }

  /** A Warning Event on the Namespace itself (what concerns the namespace's run, not one object); fire and forget. */
  private namespaceEvent(ns: string, reason: string, message: string): void {
    const now = new Date();
    const body: k8s.CoreV1Event = {
      metadata: { generateName: `${ns}.`, namespace: ns },
      // The API server wants the event's namespace in involvedObject too, even for the cluster-scoped Namespace.
      involvedObject: { apiVersion: 'v1', kind: 'Namespace', name: ns, namespace: ns },
      reason,
      message: message.slice(0, 1024),
      type: 'Warning',
      source: { component: 'kupenstack-controller' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    void this.core
      .createNamespacedEvent({ namespace: ns, body })
      .catch((err: unknown) => this.opts.log(`event   ${ns}: could not record ${reason}: ${(err as Error).message}`));
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

  private async reconcileHeld(ns: string, cleanup: boolean, leading: boolean, signal: AbortSignal): Promise<number | undefined> {
    const changedAt = this.changedAt.get(ns);
    this.changedAt.delete(ns);
    let taken: string[] | undefined;
    let takenAt = 0;
    const takeMoved = (): string[] | undefined => {
      const moved = this.movedImages.get(ns);
      this.movedImages.delete(ns);
      taken = moved && [...moved].sort();
      takenAt = Date.now();
      return taken;
    };
    const terminating = cleanup || this.namespaces.get(ns)?.metadata?.deletionTimestamp !== undefined;
    const targets = this.fullDue.has(ns) ? undefined : this.targets.get(ns);
    this.fullDue.delete(ns);
    this.targets.delete(ns);
    try {
      const after = await runNamespace(this.host, {
        ns,
        terminating,
        entries: new Map(this.objects.get(ns) ?? []),
        takeMoved,
        ...(changedAt !== undefined ? { changedAt } : {}),
        ...(targets ? { targets: [...targets].sort() } : {}),
        leading,
        signal,
      });
      // Objects OpenStack still works on are looked at again by a full pass: a targeted run in between would not see them.
      if (after !== undefined) this.fullDue.add(ns);
      return after;
    } catch (err) {
      // The queue's retry is a full pass; it resolves again what moved and this run did not resolve.
      this.fullDue.add(ns);
      if (taken) this.noteMoved(taken.filter((a) => !this.images.resolvedSince(a, takenAt)));
      throw err;
    }
  }
}
