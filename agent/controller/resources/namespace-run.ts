import type * as k8s from '@kubernetes/client-node';
import { planRevision, type EngineDeps } from '../../act/apply.ts';
import { applyOnly } from '../../act/partial.ts';
import { formatDiagnostic, type Diagnostic } from '../../diagnostic.ts';
import { fanOut, type EventSink } from '../../events/events.ts';
import type { ImageMemory } from '../../kinds/kit/image-memory.ts';
import type { OpenStackCloud } from '../../openstack/cloud.ts';
import type { ApiCounters } from '../../openstack/counters.ts';
import type { WriteGate } from '../../openstack/transport.ts';
import { setCondition, type Condition } from '../../status/conditions.ts';
import type { ResourceStatus, StateStore } from '../../status/store.ts';
import { withDependents } from '../../validate/subset.ts';
import type { ValidatedRevision } from '../../validate/validate.ts';
import { formatCalls } from '../call-counts.ts';
import { RunClock } from './run-clock.ts';
import { earlyJournal } from './early-journal.ts';
import type { ControllerOptions } from '../options.ts';
import { kubeEventSink } from './event-sink.ts';
import { syncLabel } from '../syncs/inventory.ts';
import { finalizeBeforeWrites, setFinalizer, type Finalizing } from './finalizers.ts';
import { finalizer, isDeleting } from './objects.ts';
import { reportPaused } from './paused.ts';
import { deleteNamespaceProject } from './project-cleanup.ts';
import { documentsOf, revisionOf } from './revision.ts';
import { KubeStatusStore, type NamespaceObject } from './status-store.ts';
import { validateNamespace } from './validate-namespace.ts';
import { isAdminNamespace, memberRefusals } from '../../policy/member-policy.ts';
import { CloudUnreachableError } from '../../kinds/openstackcloudconnection/index.ts';
import { subjectsOf } from '../../policy/subjects.ts';
import { isWaiting, soonest, waiting, type Looked, type Progress } from '../../../lib/progress.ts';

/** What one namespace's run reads and writes of the controller that owns it; each step below takes only the part it reads. */
export interface NamespaceRunHost {
  readonly opts: ControllerOptions;
  readonly custom: k8s.CustomObjectsApi;
  readonly core: k8s.CoreV1Api;
  /** Engine state the status subresource cannot hold (heal episodes), per address. */
  readonly memory: Map<string, ResourceStatus>;
  /** Events recorded lately, so a repeating failure is not one Event per resync. */
  readonly recentEvents: Map<string, number>;
  /** Opted-in namespaces deleted whose project is not deleted yet. */
  readonly gone: Set<string>;
  /** Runs done, per namespace. */
  readonly runs: Map<string, number>;
  /** Namespaces whose full pass ran in this leadership: only they may have a targeted run (it trusts what the full pass saw). */
  readonly fullyRun: Set<string>;
  /** What the Image kind remembers between runs: this leadership's. */
  images: () => ImageMemory;
  /** True while this replica may write for the namespace. */
  acting: (ns: string) => boolean;
  /** The step a run is at (the resync names a slow one). */
  step: (ns: string, what: string) => void;
  shardOf: (ns: string) => string;
  /** A namespace's labels as the watch has them (an admin namespace may set OpenStack's admin-only fields). */
  labelsOf: (ns: string) => Record<string, string>;
  /** Why the namespace is paused (its `kupenstack.io/paused` annotation), or undefined. */
  pausedBy: (ns: string) => string | undefined;
  /** The OpenStack client of the namespace's cloud: its connection's (label kupenstack.io/cloud); without it, `opts.cloud`. */
  cloudOf?: (ns: string) => Promise<OpenStackCloud>;
}

export interface NamespaceRunInput {
  ns: string;
  /** A namespace being deleted declares nothing: its project is emptied. */
  terminating: boolean;
  /** The namespace's objects, as the watch cache holds them when the run starts. */
  entries: Map<string, NamespaceObject>;
  /** Takes the Images a registry notification named (applied first, alone); taken once the run is past its early exits, so a run that stops before keeps them for the next. */
  takeMoved: () => string[] | undefined;
  /** When the first change not yet reconciled was seen (the `timing` line). */
  changedAt?: number;
  /** Only these objects changed since the last run was scheduled (spec created or changed): the run observes and plans them, and what they need or what needs them, not the whole namespace. */
  targets?: readonly string[];
  /** Run on the queue's leading edge: more of the same `kubectl apply` may still be on its way. */
  leading?: boolean;
  signal: AbortSignal;
}

/**
 * One namespace's run in the cluster (the resource loop: custom
 * resources → OpenStack, namespace = project), its steps in the
 * order an operator reads their marks in the `timing` line: `gate` (the
 * finalizers, set in the background; every write waits for them), `admit`
 * (refusals, validation: an invalid object is Stalled, never applied), `pass`
 * (the moved Images first, then the engine over the namespace or its targeted
 * objects), `release` (the deleted objects' finalizers and, for a deleted
 * namespace, its project) and `report`. Throws when the engine reported
 * errors, so the queue retries with backoff; answers when to run again while
 * OpenStack still works on objects or a write was held (progress by requeue:
 * the engine does not wait for them, so the run frees its slot).
 */
export async function runNamespace(host: NamespaceRunHost, run: NamespaceRunInput): Promise<number | undefined> {
  const { ns } = run;
  const clock = new RunClock(ns, host.step);
  const gated = gate(host, run, clock);
  const events = eventsOf(host, run);
  const admitted = await admit(host, run, gated.finalizing, events);
  clock.mark('validated');

  const cloud = await (host.cloudOf ? host.cloudOf(ns) : host.opts.cloud()).catch(async (err: unknown) => {
    if (err instanceof CloudUnreachableError && host.acting(ns)) await reportCloudDown(host, run, admitted, err);
    throw err;
  });
  if (!host.acting(ns)) return undefined;
  clock.mark('cloud');
  const { registry, config, secrets, journal } = host.opts;
  // The engine's cloud waits for the gate before each write: the first-write path is this argument, no hidden hook.
  const deps: EngineDeps = {
    cloud: cloud.gated(gated.writes),
    registry,
    config,
    state: admitted.store,
    events,
    secrets,
    counters: cloud.counters,
    namespaces: [ns],
    signal: run.signal,
    images: host.images(),
    step: clock.once,
    ...(journal ? { journal } : {}),
    // The cluster admin's label: such a namespace's imports keep the admin's reach (act/imports.ts).
    ...(isAdminNamespace(host.labelsOf(ns)) ? { adminNamespaces: new Set([ns]) } : {}),
  };
  const stopWatching = clock.watch(cloud.counters);
  let passed: Looked<Passed> | undefined;
  try {
    passed = await pass(host, run, admitted, deps, gated.held, clock);
  } finally {
    stopWatching();
  }
  if (passed === undefined) return undefined;
  if (isWaiting(passed)) return passed.waiting.afterMs;
  clock.mark('engine');
  const finalized = await gated.finalizing.done;
  if (typeof finalized === 'object') throw finalized.error;
  const { report, targeted } = passed.done;
  if (!targeted && host.acting(ns)) host.fullyRun.add(ns);
  clock.firstCalls();

  if (!(await release(host, run, report, cloud))) return undefined;
  host.runs.set(ns, (host.runs.get(ns) ?? 0) + 1);
  reportRun(host, run, { ...passed.done, ...admitted }, clock, cloud.counters);
  if (report.errors.length > 0) throw new Error(`${report.errors.length} errors`);
  const after = soonest(report.progressing);
  const lookAgain = admitted.awaiting.length > 0 ? host.opts.debounceMs : undefined;
  return lookAgain !== undefined ? Math.min(after ?? lookAgain, lookAgain) : after;
}

type Report = Awaited<ReturnType<ControllerOptions['engine']>>;

/** What `pass` hands on: the engine's report, and the objects a targeted pass planned (undefined: the full pass). */
interface Passed {
  report: Report;
  targeted: string[] | undefined;
}

/** The run's write gate: the finalizers being set, the verdict each write waits for, and the hold it gave, if any. */
interface Gate {
  finalizing: Finalizing;
  writes: WriteGate;
  /** The hold the gate gave a write of this run: the whole run waits with it. */
  held: () => Progress | undefined;
}

/**
 * gate: finalizers before anything exists in OpenStack (ORC): a CR deleted from now on waits for its
 * object. Set while the run validates, observes and plans (issue 33: a serial step before the observe);
 * every write of the engine's cloud waits for them, then holds while this replica no longer acts or an
 * object left Kubernetes before its finalizer was set (planned from the watch's copy: it gets nothing made,
 * the next pass sees it gone).
 */
function gate(host: Pick<NamespaceRunHost, 'opts' | 'custom' | 'acting'>, run: NamespaceRunInput, clock: RunClock): Gate {
  const { ns } = run;
  const finalizing = finalizeBeforeWrites(host.custom, run.entries, finalizer, isDeleting, () => host.acting(ns));
  void finalizing.done.then(() => clock.mark('finalizers'));
  let held: Progress | undefined;
  const writes = async (): Promise<Progress | undefined> => {
    const result = await finalizing.done;
    if (typeof result === 'object') throw result.error;
    if (result === 'stopped') held = { reason: `this replica no longer acts for namespace ${ns}`, afterMs: host.opts.debounceMs };
    else if (finalizing.gone.length > 0)
      held = { reason: `${finalizing.gone.join(', ')} left Kubernetes before its finalizer was set`, afterMs: host.opts.debounceMs };
    return held;
  };
  return { finalizing, writes, held: () => held };
}

/** Where the engine's events go: the step a slow run is at, Kubernetes Events, the Sync that applied the object, the controller's own sink. */
function eventsOf(host: Pick<NamespaceRunHost, 'opts' | 'core' | 'recentEvents' | 'step'>, run: NamespaceRunInput): EventSink {
  const { ns, entries } = run;
  const { log } = host.opts;
  // The engine's last event is the step a slow run is at (the resync names it).
  const progress: EventSink = (e) => {
    host.step(ns, `${e.type} ${e.address}`);
    // A run held back for creates a dead process sent names no object (no Event): the log says why it waits.
    if (e.type === 'held' && e.reason === 'CreatesInFlight') log(`held    ${ns}: ${e.message}`);
  };
  // An object a Sync applied carries the Sync's name: what happens to it reaches that Sync's notify targets.
  const toSync: EventSink = (e) => {
    const sync = entries.get(e.address)?.object.metadata?.labels?.[syncLabel];
    if (sync !== undefined) host.opts.syncEvents?.(sync, e);
  };
  const objectOf = (a: string): { kind: string; object: NamespaceObject['object'] } | undefined =>
    entries.get(a) && { kind: entries.get(a)!.kind.kind, object: entries.get(a)!.object };
  return fanOut(progress, kubeEventSink(host.core, objectOf, log, host.recentEvents), toSync, ...(host.opts.events ? [host.opts.events] : []));
}

/** What `admit` hands on: the revision as validated, and the run's status store. */
interface Admitted {
  revision: string;
  validated: ValidatedRevision;
  /** How many objects failed validation (the `reconciled` line). */
  rejected: number;
  /** Objects whose references are not in the namespace yet (a leading-edge run): neither rejected nor applied, looked at again. */
  awaiting: string[];
  store: StateStore;
}

/**
 * admit: what the run may apply. OpenStack's admin-only fields are refused in a tenant namespace before
 * validation (what references a refused object is refused in turn); an invalid object is Stalled. The
 * second validation is intended: custom resources can also come from `kubectl`.
 */
async function admit(
  host: Pick<NamespaceRunHost, 'opts' | 'custom' | 'memory' | 'labelsOf' | 'acting'>,
  run: NamespaceRunInput,
  finalizing: Finalizing,
  events: EventSink,
): Promise<Admitted> {
  const { ns, entries } = run;
  const { opts } = host;
  // A terminating namespace declares nothing any more, even before Kubernetes has marked each object deleted: its project is emptied.
  const documents = run.terminating ? [] : documentsOf([...entries.values()].map((e) => ({ kind: e.kind.kind, object: e.object })));
  const refused = memberRefusals(subjectsOf(documents), isAdminNamespace(host.labelsOf(ns)), opts.memberPolicy ?? { flavorExtraSpecs: [] });
  const { validated, rejected } = validateNamespace(
    documents.filter((d) => !refused.has(d.file)),
    opts.registry,
  );
  // A leading-edge run may see an object before what it references, later in the same `kubectl apply`: not rejected
  // (no Stalled flash, no Warning) but looked at again by the run after the burst, or one debounce window later.
  const awaiting = run.leading ? awaitingReferences(rejected) : [];
  for (const address of awaiting) rejected.delete(address);
  const revision = revisionOf(
    ns,
    [...entries.values()].map((e) => e.object),
  );
  const kubeStore = new KubeStatusStore(host.custom, ns, entries, host.memory, opts.log, new Set([...rejected.keys(), ...refused.keys(), ...awaiting]), () =>
    host.acting(ns),
  );
  // Status writes too are a leader's: a demoted replica writes nothing.
  const store: StateStore = {
    load: () => kubeStore.load(),
    // A status write carries the resourceVersion the finalizer patch answered.
    putResource: async (address: string, state: ResourceStatus | undefined) => {
      await finalizing.done;
      if (host.acting(ns)) await kubeStore.putResource(address, state);
    },
    finishRun: (summary) => kubeStore.finishRun(summary),
  };
  for (const [address, diagnostics] of rejected)
    await reject(host.memory, address, diagnostics.map(formatDiagnostic).join('; '), entries, store, events, revision);
  for (const [address, messages] of refused) await reject(host.memory, address, messages.join('; '), entries, store, events, revision, 'AdminOnly');
  return { revision, validated, rejected: rejected.size, awaiting, store };
}

/**
 * pass: the engine over what `admit` let through. A paused namespace is planned only (undefined: nothing
 * to look again for). A run whose changed objects all wait for references waits one debounce window. The
 * Images a registry notification named go first, alone; then the full pass or, for a run started by a few
 * changed objects, a targeted one. A run the gate or the engine held (creates a dead process sent still
 * landing, act/landing.ts) answers the hold: nothing ran, no finalizer is released; the queue looks again.
 */
async function pass(
  host: Pick<NamespaceRunHost, 'opts' | 'memory' | 'fullyRun' | 'pausedBy' | 'acting'>,
  run: NamespaceRunInput,
  admitted: Admitted,
  deps: EngineDeps,
  held: () => Progress | undefined,
  clock: RunClock,
): Promise<Looked<Passed> | undefined> {
  const { ns, entries, terminating, signal } = run;
  const { opts } = host;
  const { revision, validated, awaiting } = admitted;
  const why = host.pausedBy(ns);
  if (why !== undefined) return pausedRun(host, ns, why, { revision, validated }, deps, entries, admitted.store, deps.events);
  const moved = run.takeMoved();
  // What moved is the engine's input: both passes below resolve these again, once (they share the set).
  if (moved) deps.refresh = new Set(moved);
  const targets = run.targets?.filter((a) => !awaiting.includes(a));
  if (awaiting.length > 0 && !moved && !terminating && targets?.length === 0) {
    opts.log(`waiting ${ns}: ${awaiting.join(', ')} reference objects not in the namespace yet; looked at again in ${opts.debounceMs} ms`);
    return waiting(`${awaiting.join(', ')} reference objects not in the namespace yet`, opts.debounceMs);
  }
  const targeted = moved || terminating || !host.fullyRun.has(ns) ? undefined : targetsOf(targets, validated, entries);
  // A targeted run records the creates of its new objects while it observes (early-journal.ts), not between the plan and the write.
  const isNew = (a: string): boolean => typeof entries.get(a)?.object.status?.['id'] !== 'string' && host.memory.get(a)?.id === undefined;
  const journal = opts.journal;
  const early =
    targeted && journal
      ? earlyJournal(
          journal,
          (targets ?? []).filter((a) => targeted.includes(a) && isNew(a)),
          deps.cloud.session.transport.timeoutMs,
        )
      : undefined;
  try {
    const first = moved && !terminating ? await imagesFirst(opts, ns, { revision, validated }, moved, deps, held, clock.mark) : undefined;
    if (first) return { waiting: first };
    const report = await enginePass(opts, ns, { revision, validated }, targeted, early ? { ...deps, journal: early } : deps);
    // Held whole (creates a dead process sent still landing, act/landing.ts): nothing ran, no finalizer is released; the queue looks again.
    if (report.waiting && !signal.aborted) return { waiting: report.waiting };
    return { done: { report, targeted } };
  } catch (err) {
    const hold = signal.aborted ? undefined : held();
    if (hold) return { waiting: hold };
    throw err;
  } finally {
    await early?.close();
  }
}

/**
 * release: the finalizers of the deleted objects the engine is done with (what failed, or what OpenStack
 * is still deleting, keeps its finalizer until a later run finds it gone) and, for a deleted namespace
 * left empty, its project. False when this replica no longer acts for the namespace: nothing is released.
 */
async function release(
  host: Pick<NamespaceRunHost, 'opts' | 'custom' | 'gone' | 'acting'>,
  run: NamespaceRunInput,
  report: Report,
  cloud: OpenStackCloud,
): Promise<boolean> {
  const { ns, entries } = run;
  const failed = new Set([...report.errors, ...report.progressing].map((e) => e.address));
  const deleting = [...entries].filter(([, e]) => isDeleting(e.object));
  const releasable = deleting.filter(([address]) => !failed.has(address));
  const emptied = run.terminating && report.errors.length === 0 && report.progressing.length === 0 && releasable.length === entries.size;
  if (!host.acting(ns)) return false;
  if (emptied) {
    const id = await deleteNamespaceProject(cloud, host.opts.config.owner, ns);
    if (id) host.opts.log(`delete  project of namespace ${ns} (${id})`);
    host.gone.delete(ns);
  }
  for (const [address, entry] of releasable) {
    await setFinalizer(host.custom, entry.kind.plural, entry.object, finalizer, false);
    entries.delete(address);
  }
  return true;
}

/** report: the run's three log lines: what it did, where its time went before the first write, the calls it made. */
function reportRun(
  host: Pick<NamespaceRunHost, 'opts' | 'shardOf'>,
  run: NamespaceRunInput,
  done: Passed & Pick<Admitted, 'revision' | 'validated' | 'rejected'>,
  clock: RunClock,
  counters: ApiCounters,
): void {
  const { ns } = run;
  const { opts } = host;
  const { report, targeted } = done;
  const counts = `${report.created} created, ${report.updated} updated, ${report.deleted} deleted, ${report.healed} healed, ${report.unchanged} unchanged, ${report.errors.length} errors`;
  const progressing = report.progressing.length
    ? `, ${report.progressing.length} progressing (looked at again in ${Math.ceil(soonest(report.progressing)! / 1000)} s)`
    : '';
  const scope = targeted ? ` (targeted: ${targeted.length} of ${done.validated.manifests.length} objects)` : '';
  const shard = opts.sharding ? ` (shard ${host.shardOf(ns)})` : '';
  opts.log(`reconciled ${ns}${shard} at ${done.revision} in ${Date.now() - clock.started} ms: ${counts}, ${done.rejected} rejected${progressing}${scope}`);
  opts.log(clock.line(run.changedAt));
  opts.log(
    `calls   after ${ns}: ${formatCalls(counters, opts.kubeCalls ?? { list: 0, watch: 0, get: 0, write: 0 })}${opts.kubeCalls ? '' : ' (kubernetes not counted)'}`,
  );
}

/** The rejected objects whose every fault is a reference to an object not in the namespace (`ref.missing`). */
function awaitingReferences(rejected: ReadonlyMap<string, readonly Diagnostic[]>): string[] {
  return [...rejected].filter(([, ds]) => ds.length > 0 && ds.every((d) => d.code === 'ref.missing')).map(([address]) => address);
}

/**
 * The engine over the namespace (prune: every deletion here is a `kubectl
 * delete` of that very object, an explicit act, so the mass-delete guard,
 * which is for files vanishing from Git, is off), or over the targeted
 * objects only (issue 33: a `kubectl apply` of a few objects waits for
 * those, not for a list of every kind in the project; the resync's full pass
 * still finds drift and prunes). An invalid object may still have an
 * OpenStack object from its last valid spec: the store marks it kept (as
 * detached), so prune deletes only what was deleted in Kubernetes.
 */
async function enginePass(
  opts: ControllerOptions,
  ns: string,
  input: { revision: string; validated: ValidatedRevision },
  targeted: string[] | undefined,
  deps: EngineDeps,
): Promise<Report> {
  if (!targeted) return opts.engine(input, deps, { prune: true, allowMassDelete: true, requeue: true });
  const pass = await applyOnly(opts.engine, input, targeted, deps, true);
  if ('skipped' in pass) throw new Error(`targeted run of ${ns}: ${pass.skipped}`);
  return pass.report;
}

/**
 * The objects a targeted run plans: the changed ones that validated and,
 * transitively, what depends on them (a replace cascades to them). Undefined
 * means the full pass: no targets recorded (a resync, a requeue, a retry, a
 * label change), a changed object gone from the cache or invalid, or any
 * object being deleted (its finalizer waits for the prune of a full pass).
 */
function targetsOf(targets: readonly string[] | undefined, validated: ValidatedRevision, entries: ReadonlyMap<string, NamespaceObject>): string[] | undefined {
  if (!targets || targets.length === 0) return undefined;
  if ([...entries.values()].some((e) => isDeleting(e.object))) return undefined;
  const valid = new Set(validated.manifests.map((m) => m.address));
  if (!targets.every((a) => entries.has(a) && valid.has(a))) return undefined;
  return withDependents(validated, targets);
}

/**
 * A paused namespace (paused.ts): the plan only, read from OpenStack, and
 * its drift on the objects; no finalizer is released (a deleted object's
 * OpenStack object stays until the pause ends). The resync runs it again.
 */
async function pausedRun(
  host: Pick<NamespaceRunHost, 'opts' | 'memory' | 'acting'>,
  ns: string,
  why: string,
  input: Parameters<typeof planRevision>[0],
  deps: EngineDeps,
  entries: Map<string, NamespaceObject>,
  store: StateStore,
  events: EventSink,
): Promise<undefined> {
  const plan = await planRevision(input, deps, { prune: true, allowMassDelete: true });
  if (!host.acting(ns)) return undefined;
  const drifted = await reportPaused({
    ns,
    why,
    addresses: [...entries.keys()],
    plan,
    store,
    events,
    kindOf: (a) => entries.get(a)?.kind.kind,
    current: (a) => currentStatus(entries.get(a), host.memory.get(a)),
  });
  host.opts.log(
    `paused  ${ns} (${why}): ${drifted} objects differ from OpenStack, not corrected; ${plan.errors.length} could not be planned; nothing written to OpenStack`,
  );
  return undefined;
}

/**
 * The namespace's cloud is down (its connection's last probe failed): each valid object says so,
 * Stalled naming the connection and why, keeping what it had (id, observed); nothing is called. The
 * connection's recovery runs the namespace again, which writes the engine's conditions back.
 */
async function reportCloudDown(host: Pick<NamespaceRunHost, 'memory'>, run: NamespaceRunInput, admitted: Admitted, err: CloudUnreachableError): Promise<void> {
  const valid = new Set(admitted.validated.manifests.map((m) => m.address));
  const now = new Date();
  const reason = 'CloudUnreachable';
  for (const [address, entry] of run.entries) {
    if (!valid.has(address)) continue;
    const current = currentStatus(entry, host.memory.get(address));
    const ready = current.conditions?.find((c) => c.type === 'Ready');
    if (ready?.reason === reason && ready.message === err.message) continue;
    let conditions = setCondition<Condition>(current.conditions ?? [], { type: 'Stalled', status: 'True', reason, message: err.message }, now);
    conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason, message: err.message }, now);
    conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason, message: 'waiting for the cloud to answer again' }, now);
    await admitted.store.putResource(address, { ...current, conditions });
  }
}

/** What the object's status holds now, as the store writes it back (a paused run changes only its conditions). */
function currentStatus(entry: NamespaceObject | undefined, known: ResourceStatus | undefined): ResourceStatus {
  if (known?.conditions) return known;
  const { conditions, id, lastSyncTime, observedGeneration: _generation, heal: _heal, observed, ...fields } = entry?.object.status ?? {};
  return {
    ...known,
    ...(Array.isArray(conditions) ? { conditions: conditions as Condition[] } : {}),
    ...(typeof id === 'string' ? { id } : {}),
    ...(typeof lastSyncTime === 'string' ? { lastSyncTime } : {}),
    observed: { ...(typeof observed === 'object' && observed !== null ? observed : {}), ...fields },
  };
}

/**
 * A tag moved (registry notification): the Images it named, and what they
 * need, are planned and applied alone before the namespace's full pass —
 * against the projects the last full pass saw, no prune — so the new
 * version is active without waiting for every kind of the namespace to be
 * listed. Only valid objects take part (a rejected Image is not in
 * `validated`). A failure is logged; the full pass right after does it
 * all again and reports it on the objects. A hold (the gate's, the
 * engine's) holds the whole run: it is answered, and no full pass follows.
 */
async function imagesFirst(
  opts: ControllerOptions,
  ns: string,
  input: { revision: string; validated: ValidatedRevision },
  addresses: string[],
  deps: EngineDeps,
  held: () => Progress | undefined,
  mark: (what: string) => void,
): Promise<Progress | undefined> {
  try {
    const pass = await applyOnly(opts.engine, input, addresses, deps, true);
    if ('skipped' in pass) {
      opts.log(`images  ${ns}: ${addresses.join(', ')} not applied first: none is a valid object of the namespace now`);
      return undefined;
    }
    const r = pass.report;
    if (r.waiting) return r.waiting;
    mark('images first');
    opts.log(
      `images  ${ns}: ${addresses.join(', ')} applied first (registry notification): ${r.created} created, ${r.updated} updated, ` +
        `${r.unchanged} unchanged, ${r.errors.length} errors; the full pass follows`,
    );
    return undefined;
  } catch (err) {
    if (deps.signal?.aborted) throw err;
    const hold = held();
    if (hold) return hold;
    opts.log(`images  ${ns}: applying ${addresses.join(', ')} first failed, the full pass follows: ${(err as Error).message}`);
    return undefined;
  }
}

/** A Stalled object: what `kupenstack validate` says, once per generation as an Event, and nothing created from it. */
async function reject(
  memory: Map<string, ResourceStatus>,
  address: string,
  message: string,
  entries: Map<string, NamespaceObject>,
  store: StateStore,
  events: EventSink,
  revision: string,
  reason = 'InvalidSpec',
): Promise<void> {
  const entry = entries.get(address);
  if (!entry) return;
  const previous = (entry.object.status?.conditions as { type: string; message?: string; observedGeneration?: number }[] | undefined)?.find(
    (c) => c.type === 'Stalled',
  );
  const now = new Date();
  const known = memory.get(address) ?? {};
  let conditions = setCondition<Condition>([], { type: 'Stalled', status: 'True', reason, message }, now);
  conditions = setCondition(conditions, { type: 'Ready', status: 'False', reason, message }, now);
  conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason, message: 'waiting for a corrected spec' }, now);
  await store.putResource(address, { ...known, conditions });
  if (previous?.message !== message || previous.observedGeneration !== entry.object.metadata.generation) {
    events({ type: 'rejected', address, kind: entry.kind.kind, reason, message, severity: 'warning', revision, at: now.toISOString() });
  }
}
