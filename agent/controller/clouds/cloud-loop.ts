import * as k8s from '@kubernetes/client-node';
import { failureText, type StepEntry } from '../../cloud/apply.ts';
import { DEFAULT_CLOUD_NAMESPACE, driveCloud, type DriveOptions, type DriveResult } from '../../cloud/drive.ts';
import { newRolloutMemory, type RolloutMemory } from '../../cloud/rollout.ts';
import type { CloudStatusHome } from '../../cloud/status-home.ts';
import { formatDiagnostic } from '../../diagnostic.ts';
import { KupenstackError } from '../../errors.ts';
import type { EngineEvent } from '../../events/events.ts';
import { serverSideApply } from '../../kube/client.ts';
import { kubeApiError } from '../../kube/errors.ts';
import { gatedWrites } from '../../kube/gated.ts';
import { specOf, type OpenStackCloudSpec, type OpenStackCloudStatus } from '../../model/kinds.generated.ts';
import { OpenStackCloud } from '../../openstack/cloud.ts';
import { apiVersion, group, version, type SchemaRegistry } from '../../schema/registry.ts';
import { setCondition } from '../../status/conditions.ts';
import { serviceEndpoints, type ServiceEndpoint } from './cloud-endpoints.ts';
import { cloudStatusBody, type CloudStatusExtras } from './cloud-status.ts';
import { kubeEventSink } from '../resources/event-sink.ts';
import { syncLabel } from '../syncs/inventory.ts';
import { rewatchOnError } from '../../kube/rewatch.ts';
import { addressOfObject, isDeleting, type KubeObject } from '../resources/objects.ts';
import { documentsOf } from '../resources/revision.ts';
import { statusManager } from '../resources/status-store.ts';
import { newerVersion, unwrittenReason, writeFencedStatus } from '../resources/status-fence.ts';
import { sameStatus } from '../resources/status-writer.ts';
import { validateNamespace } from '../resources/validate-namespace.ts';
import { WorkQueue } from '../resources/work-queue.ts';

const plural = 'openstackclouds';
const kind = 'OpenStackCloud';
/** The manifest's annotation that pauses an upgrade before a chart (as `kupenstack apply` reads it). */
const pauseAnnotation = 'kupenstack.io/pause-upgrade-at';
/** setTimeout's limit; a window further away is looked at again by then (or by a resync). */
const maxTimerMs = 2 ** 31 - 1;

export interface CloudLoopOptions {
  kc: k8s.KubeConfig;
  registry: SchemaRegistry;
  /** The OpenStack the controller talks to: its Keystone catalog gives each service's endpoint. */
  openstack?: () => Promise<OpenStackCloud>;
  /** A Ready cloud is driven again this often (drift in the cloud's namespace is corrected). */
  resyncMs: number;
  debounceMs: number;
  /** After a failed run: first retry, doubling up to the max. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** True while this replica may act (leader, or holder of the default shard). */
  acting: () => boolean;
  log: (line: string) => void;
  /** Where a relative spec.chart.path starts. */
  baseDir: string;
  helm?: string;
  /** Only the OpenStackCloud resources matching this label selector (tests sharing a cluster). */
  selector?: string;
  /** A gate's look again (requeue) and step deadline (tests shorten them). */
  drive?: Pick<DriveOptions, 'pollMs' | 'stepDeadlineMs'>;
  /** The run's events, for the Sync that applied the CR (its label kupenstack.io/sync): its notify targets hear of upgrade steps and failures. */
  syncEvents?: (sync: string, event: EngineEvent, cloud: { upgrading: boolean }) => void;
}

type CloudObject = KubeObject & k8s.KubernetesObject;

/** One rollout of a cloud across its passes: the generation it drives, what driveCloud remembers, the step Events already recorded. */
interface Rollout {
  generation: number | undefined;
  memory: RolloutMemory;
  announced: Set<string>;
}

/** One pass over one cloud: what its parts (admit, drive, failed, finished) read. */
interface CloudPass {
  name: string;
  cr: CloudObject;
  address: string;
  generation: number | undefined;
  /** The CR's status when the pass started. */
  before: OpenStackCloudStatus;
  /** The newest status this pass saw: whether an upgrade is under way when an Event is told. */
  latest: OpenStackCloudStatus;
  /** A resync of a cloud Ready at this generation: no step Events. */
  quiet: boolean;
  abort: AbortController;
  signal: AbortSignal;
  rollout: Rollout;
  /** False (and the pass aborted) once this replica does not act any more. */
  stillActing: () => boolean;
  event: (reason: string, message: string, severity?: EngineEvent['severity']) => void;
}
type Informer = k8s.Informer<CloudObject> & k8s.ObjectCache<CloudObject>;

/**
 * The in-cluster cloud lifecycle (issue #14): watches the cluster-scoped OpenStackCloud CRs
 * and, only while this replica acts, drives each with driveCloud — the same engine as
 * `kupenstack apply --kubeconfig` — one run at a time per cloud. A run starts on a spec
 * change (generation, or the pause annotation), on a resync, when a maintenance window the
 * run waited for opens, and after a failure with backoff; a run in flight stops when
 * leadership is lost or the CR is deleted (deleting the CR does not uninstall the cloud).
 * The CR's status subresource is the cloud's status home: driveCloud saves its progress there
 * as it goes (status-home.ts), and the steps, gates, failures and backups it reports are
 * Events on the CR.
 */
export class CloudLoop {
  private readonly opts: CloudLoopOptions;
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly clouds = new Map<string, CloudObject>();
  private readonly queue: WorkQueue;
  private readonly aborts = new Map<string, AbortController>();
  private readonly windowTimers = new Map<string, NodeJS.Timeout>();
  /** The status last written per cloud: an identical one is not written again. */
  private readonly written = new Map<string, OpenStackCloudStatus>();
  /** The newest resourceVersion of each cloud this replica saw (watch or its own write): status writes are fenced by it. */
  private readonly versions = new Map<string, string>();
  /** Each service's endpoint as last read from the catalog, kept across progress writes. */
  private readonly endpoints = new Map<string, Record<string, ServiceEndpoint>>();
  private readonly recentEvents = new Map<string, number>();
  /** A rollout between its passes (progress by requeue): its generation, its memory, the step Events already recorded. */
  private readonly rollouts = new Map<string, Rollout>();
  private leadership = new AbortController();
  private informer?: Informer;
  private resync?: NodeJS.Timeout;
  private stopped = false;
  /** Runs finished per cloud (tests). */
  readonly runs = new Map<string, number>();

  constructor(opts: CloudLoopOptions) {
    this.opts = opts;
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
    // One cloud per cluster in practice: no point running two at once.
    const backoff = { backoffBaseMs: opts.backoffBaseMs ?? 10_000, backoffMaxMs: opts.backoffMaxMs ?? 600_000 };
    this.queue = new WorkQueue({ debounceMs: opts.debounceMs, ...backoff, concurrency: 1 }, (name) => this.reconcile(name));
  }

  async start(): Promise<void> {
    const list = async (): Promise<k8s.KubernetesListObject<CloudObject>> =>
      (await this.custom.listClusterCustomObject({ group, version, plural, labelSelector: this.opts.selector })) as k8s.KubernetesListObject<CloudObject>;
    const informer = k8s.makeInformer<CloudObject>(this.opts.kc, `/apis/${group}/${version}/${plural}`, list, this.opts.selector);
    informer.on('add', (o) => this.onCloud(o));
    informer.on('update', (o) => this.onCloud(o));
    informer.on('delete', (o) => this.onGone(o.metadata.name));
    rewatchOnError(informer, plural, this.opts.log, () => this.stopped);
    this.informer = informer;
    await informer.start();
    this.opts.log(`cloud   watching OpenStackCloud (${this.clouds.size} now); driven while this replica acts`);
    this.resync = setInterval(() => {
      for (const name of this.clouds.keys()) this.queue.add(name, 0, true);
    }, this.opts.resyncMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resync) clearInterval(this.resync);
    for (const t of this.windowTimers.values()) clearTimeout(t);
    this.queue.stop();
    this.leadership.abort(new Error('controller stopping'));
    await this.informer?.stop().catch(() => {});
  }

  /** Leadership gained: every cloud is driven (what came while following was not). */
  startedLeading(): void {
    for (const name of this.clouds.keys()) this.queue.add(name, 0);
  }

  /** Leadership lost: the run in flight stops at its next API call or poll; the next leader resumes from the status on the CR. */
  stoppedLeading(): void {
    if (this.aborts.size > 0) this.opts.log(`cloud   not leading any more: stopping ${[...this.aborts.keys()].join(', ')}`);
    for (const name of this.rollouts.keys())
      if (!this.aborts.has(name)) this.opts.log(`cloud   ${name}: run stopped (leadership lost while it waited to look again)`);
    this.rollouts.clear();
    this.leadership.abort(new Error('leadership lost'));
    this.leadership = new AbortController();
    this.written.clear();
    this.recentEvents.clear();
  }

  /** Resolves when no cloud is scheduled or running (tests). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private onCloud(o: CloudObject): void {
    const name = o.metadata.name;
    const old = this.clouds.get(name);
    this.clouds.set(name, o);
    this.seen(name, o.metadata.resourceVersion);
    if (isDeleting(o)) {
      this.aborts.get(name)?.abort(new Error(`OpenStackCloud ${name} is being deleted`));
      return;
    }
    // Our own status writes change neither the generation nor the annotations: they must not schedule a run.
    const matters =
      !old || old.metadata.generation !== o.metadata.generation || old.metadata.annotations?.[pauseAnnotation] !== o.metadata.annotations?.[pauseAnnotation];
    if (matters) this.queue.add(name);
  }

  private onGone(name: string): void {
    this.clouds.delete(name);
    this.aborts.get(name)?.abort(new Error(`OpenStackCloud ${name} was deleted`));
    clearTimeout(this.windowTimers.get(name));
    this.windowTimers.delete(name);
    this.rollouts.delete(name);
    this.written.delete(name);
    this.versions.delete(name);
    this.endpoints.delete(name);
    this.opts.log(`cloud   ${name} deleted: not driven any more (its workloads stay; delete its namespace to remove them)`);
  }

  /**
   * One pass over one cloud: admit its spec, drive it, turn what the pass reports into status and
   * Events. A gate not met yet ends the pass with the delay to look again after (the queue's
   * RequeueAfter): no worker waits for a rollout.
   */
  private async reconcile(name: string): Promise<void | number> {
    const cr = this.clouds.get(name);
    if (!cr || isDeleting(cr) || !this.opts.acting()) {
      if (this.rollouts.delete(name))
        this.opts.log(`cloud   ${name}: run stopped (${cr && !isDeleting(cr) ? 'not acting any more' : 'deleted'}, it waited to look again)`);
      return;
    }
    const pass = this.passOf(name, cr);
    const spec = await this.admit(pass);
    if (!spec) return; // Waits for a spec change: retrying the same spec cannot help.
    const namespace = spec.namespace ?? DEFAULT_CLOUD_NAMESPACE;
    if (this.rollouts.get(name) !== pass.rollout) {
      this.rollouts.set(name, pass.rollout);
      this.opts.log(`cloud   ${name}: driving release ${spec.release} in namespace ${namespace} (generation ${pass.generation ?? '?'})`);
    }
    this.aborts.set(name, pass.abort);
    let result: DriveResult;
    try {
      result = await driveCloud(spec, this.driveOptions(pass, namespace));
    } catch (err) {
      return this.failed(pass, err);
    } finally {
      if (this.aborts.get(name) === pass.abort) this.aborts.delete(name);
    }
    return this.finished(pass, spec, result);
  }

  /** What one pass reads: the CR as it was, its Events, its stop, the rollout it continues. */
  private passOf(name: string, cr: CloudObject): CloudPass {
    const address = addressOfObject(kind, cr);
    const sink = kubeEventSink(this.core, () => ({ kind, object: this.clouds.get(name) ?? cr }), this.opts.log, this.recentEvents);
    const sync = cr.metadata.labels?.[syncLabel];
    const generation = cr.metadata.generation;
    const before = (cr.status ?? {}) as OpenStackCloudStatus;
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, this.leadership.signal]);
    const kept = this.rollouts.get(name);
    const pass: CloudPass = {
      name,
      cr,
      address,
      generation,
      before,
      latest: before,
      // A resync of a cloud Ready at this generation records no step Events (one per step every resync would drown the real ones).
      quiet: before.observedGeneration === generation && before.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
      abort,
      signal,
      rollout: kept && kept.generation === generation ? kept : { generation, memory: newRolloutMemory(), announced: new Set<string>() },
      // A replica whose renew deadline passed (a paused process, a partitioned node) may not have run its elector yet: asked before each write, it stops itself.
      stillActing: () => {
        if (!signal.aborted && !this.opts.acting()) abort.abort(new Error('not acting any more (Lease not renewed in time)'));
        return !signal.aborted;
      },
      event: (reason, message, severity = 'normal') => {
        const e: EngineEvent = { type: severity === 'warning' ? 'failed' : 'updated', address, kind, reason, message, severity, at: new Date().toISOString() };
        sink(e);
        if (sync !== undefined) this.opts.syncEvents?.(sync, e, { upgrading: pass.latest.upgrade !== undefined && pass.latest.upgrade.phase !== 'Succeeded' });
      },
    };
    return pass;
  }

  /**
   * The same checks as `kupenstack validate`, the CRs together (one cloud per cluster: the oldest is driven, any other is
   * Stalled). The spec as validated, or undefined when it was refused (status and Event written).
   */
  private async admit(pass: CloudPass): Promise<OpenStackCloudSpec | undefined> {
    const all = [...this.clouds.values()]
      .filter((o) => !isDeleting(o))
      .sort((a, b) => String(a.metadata.creationTimestamp ?? '').localeCompare(String(b.metadata.creationTimestamp ?? '')));
    const { validated, rejected } = validateNamespace(documentsOf(all.map((object) => ({ kind, object }))), this.opts.registry);
    const refused = rejected.get(pass.address);
    // Each document's file is its object's address (revision.ts), as the rejected ones are keyed.
    const manifest = validated.manifests.find((m) => m.source.file === pass.address);
    if (!refused && manifest) return specOf(manifest, kind);
    const message = refused ? refused.map(formatDiagnostic).join('; ') : 'not among the valid OpenStackClouds';
    let conditions = setCondition(pass.before.conditions ?? [], { type: 'Stalled', status: 'True', reason: 'InvalidSpec', message });
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason: 'InvalidSpec', message });
    conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason: 'InvalidSpec', message: 'waiting for a corrected spec' });
    await this.writeStatus(pass.name, { ...pass.before, conditions }, { generation: pass.generation });
    pass.event('InvalidSpec', message, 'warning');
    return undefined;
  }

  /** driveCloud's options for this pass: writes gated by this replica still acting, the status kept on the CR, the rollout's memory. */
  private driveOptions(pass: CloudPass, namespace: string): DriveOptions {
    const pauseAt = pass.cr.metadata.annotations?.[pauseAnnotation];
    return {
      // Before each write (an object, the inventory, a Secret): a replica that stopped acting mid-step (paused, partitioned) writes nothing further.
      kubeConfig: gatedWrites(this.opts.kc, () => {
        if (!pass.stillActing()) throw pass.signal.reason as Error;
      }),
      cloud: pass.name,
      namespace,
      baseDir: this.opts.baseDir,
      // The workloads' field manager is driveCloud's own, as standalone: a cloud installed by `kupenstack apply` and then by the controller has one owner.
      ...(this.opts.helm ? { helm: this.opts.helm } : {}),
      ...this.opts.drive,
      requeue: true,
      rollout: pass.rollout.memory,
      ...(pauseAt ? { pauseAt } : {}),
      log: this.opts.log,
      signal: pass.signal,
      home: this.statusHome(pass),
    };
  }

  /**
   * The cloud's status home in the cluster: the CR's status subresource, as this replica last wrote it (else as the
   * watch shows it). Each save is written before driveCloud goes on, so a replica killed mid-rollout leaves the step it
   * reached there; a save this replica could not write (not acting, fenced by a newer leader) stops the run.
   */
  private statusHome(pass: CloudPass): CloudStatusHome {
    const { name } = pass;
    return {
      status: this.written.get(name) ?? pass.before,
      save: async ({ status }) => {
        if (!pass.stillActing()) throw pass.signal.reason as Error;
        const backup = status.upgrade?.backup;
        const newBackup = backup !== undefined && backup !== pass.latest.upgrade?.backup;
        pass.latest = status;
        if (newBackup) pass.event('BackupDone', `backup before the upgrade ${status.upgrade?.from ?? '?'} → ${status.upgrade?.to ?? '?'}: ${backup}`);
        const kept = await this.writeStatus(name, status, { generation: pass.generation, progressOver: this.written.get(name) ?? pass.before });
        if (!kept)
          throw new KupenstackError(
            'cloud.status-not-written',
            `OpenStackCloud ${name}: its status could not be written, so the run stops before the step it would record`,
          );
      },
    };
  }

  /** A pass that threw: stopped from outside (logged), or failed (Ready False, an Event, thrown for the queue's backoff). */
  private async failed(pass: CloudPass, err: unknown): Promise<void> {
    this.rollouts.delete(pass.name);
    if (pass.signal.aborted || !this.opts.acting()) {
      this.opts.log(`cloud   ${pass.name}: run stopped (${(pass.signal.reason as Error | undefined)?.message ?? 'not acting'})`);
      return;
    }
    const message = (err as Error).message;
    // What this run wrote last (its progress), else the CR's status.
    const stored = this.written.get(pass.name) ?? pass.before;
    let conditions = setCondition(stored.conditions ?? [], { type: 'Ready', status: 'False', reason: 'RunFailed', message });
    conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason: 'RunFailed', message: 'retried with backoff' });
    conditions = setCondition(conditions, { type: 'Stalled', status: 'True', reason: 'RunFailed', message });
    await this.writeStatus(pass.name, { ...stored, conditions }, { generation: pass.generation });
    pass.event('RunFailed', message, 'warning');
    throw err;
  }

  /** A pass that ended: its steps as Events, then a look again (a gate not met), a window to wait for, a failure or Ready. */
  private async finished(pass: CloudPass, spec: OpenStackCloudSpec, result: DriveResult): Promise<void | number> {
    const { name } = pass;
    const acting = !pass.signal.aborted && this.opts.acting();
    if (acting) this.announce(pass, result.stepLog);
    if (result.waiting && acting) {
      this.opts.log(`cloud   ${name}: not yet: ${result.waiting.reason}; looked at again in ${Math.ceil(result.waiting.afterMs / 1000)} s`);
      return result.waiting.afterMs;
    }
    this.rollouts.delete(name);
    if (!acting) {
      this.opts.log(`cloud   ${name}: run stopped (${(pass.signal.reason as Error | undefined)?.message ?? 'not acting'})`);
      return;
    }
    this.runs.set(name, (this.runs.get(name) ?? 0) + 1);
    // The controller's own cloud when it has one, else the admin this install generated (a controller without --cloud).
    const admin = result.admin;
    const openstack = this.opts.openstack ?? (admin ? () => Promise.resolve(new OpenStackCloud(admin)) : undefined);
    if (openstack) this.endpoints.set(name, await this.readEndpoints(openstack, Object.keys(result.status.services ?? {})));
    await this.writeStatus(name, result.status, { generation: pass.generation, failure: result.failure, waitUntil: result.waitUntil });
    this.scheduleWindow(name, result.waitUntil);
    pass.latest = result.status;
    if (result.failure) {
      pass.event('StepFailed', `${result.failure.step}: ${failureText(result.failure)}`, 'warning');
      // Thrown for the queue's backoff; the status and the Event above already say why.
      throw new Error(`cloud ${name}: ${result.failure.step} failed`);
    }
    if (result.ready && !pass.quiet) pass.event('Ready', `release ${result.status.release ?? spec.release}: every service ready`);
  }

  /** The steps a pass started and the gates it passed, as Events; each pass of a rollout goes through its finished steps again, recorded once. */
  private announce(pass: CloudPass, stepLog: readonly StepEntry[]): void {
    if (pass.quiet) return;
    for (const { step, event } of stepLog) {
      if (pass.rollout.announced.has(`${step}/${event}`)) continue;
      pass.rollout.announced.add(`${step}/${event}`);
      pass.event(
        event === 'started' ? 'StepStarted' : 'GatePassed',
        `${event === 'started' ? 'step' : 'gate of step'} ${step} ${event === 'started' ? 'started' : 'passed'}`,
      );
    }
  }

  /** Outside the maintenance window: the cloud is queued again when the next one opens. */
  private scheduleWindow(name: string, waitUntil: Date | undefined): void {
    clearTimeout(this.windowTimers.get(name));
    this.windowTimers.delete(name);
    if (!waitUntil) return;
    const delay = Math.min(maxTimerMs, Math.max(0, waitUntil.getTime() - Date.now()));
    this.windowTimers.set(name, setTimeout(() => this.queue.add(name, 0), delay).unref());
    this.opts.log(`cloud   ${name}: waits for the maintenance window at ${waitUntil.toISOString()}`);
  }

  private async readEndpoints(openstack: () => Promise<OpenStackCloud>, charts: string[]): Promise<Record<string, ServiceEndpoint>> {
    try {
      const cloud = await openstack();
      const token = await cloud.session.token({ default: true });
      return serviceEndpoints(charts, token.catalog, cloud.config.regionName);
    } catch (err) {
      return serviceEndpoints(charts, err instanceof Error ? err : new Error(String(err)));
    }
  }

  /**
   * Server-side apply of the whole status under the controller's field manager, fenced by the
   * resourceVersion this replica last saw (status-fence.ts): a write that leaves a paused replica
   * after the new leader wrote meets 409 instead of undoing the newer status. A failed write is
   * logged; true when the CR holds the status (written, or already the same).
   */
  private async writeStatus(name: string, stored: OpenStackCloudStatus, extras: CloudStatusExtras): Promise<boolean> {
    if (!this.clouds.has(name)) return false;
    const status = cloudStatusBody(stored, { ...extras, endpoints: this.endpoints.get(name) });
    if (sameStatus(this.written.get(name) ?? this.clouds.get(name)?.status, status)) return true;
    try {
      const outcome = await writeFencedStatus({
        resourceVersion: this.versions.get(name),
        acting: () => this.opts.acting() && this.clouds.has(name),
        apply: async (resourceVersion) => {
          const body = { apiVersion, kind, metadata: { name, ...(resourceVersion ? { resourceVersion } : {}) }, status };
          const updated = (await this.custom.patchClusterCustomObjectStatus(
            { group, version, plural, name, fieldManager: statusManager, force: true, body },
            serverSideApply,
          )) as CloudObject;
          return updated.metadata.resourceVersion;
        },
        read: async () => ((await this.custom.getClusterCustomObject({ group, version, plural, name })) as CloudObject).metadata.resourceVersion,
      });
      if (outcome.written) {
        this.seen(name, outcome.resourceVersion);
        this.written.set(name, status);
        return true;
      }
      const why = unwrittenReason(outcome);
      if (why) this.opts.log(`status  OpenStackCloud ${name}: status not written (${why})`);
    } catch (err) {
      this.opts.log(`status  OpenStackCloud ${name}: could not write status (${kubeApiError('status write', err).message})`);
    }
    return false;
  }

  /** Keeps the newest resourceVersion known for a cloud (watch or own write). */
  private seen(name: string, resourceVersion: string | undefined): void {
    const newest = newerVersion(this.versions.get(name), resourceVersion);
    if (newest) this.versions.set(name, newest);
  }
}
