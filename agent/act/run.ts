import type { Marker } from '../ownership/marker.ts';
import type { EngineEvent, EngineEventType, EventSink } from '../events/events.ts';
import type { KindAdapter, Remote } from '../kinds/kit/adapter.ts';
import type { Manifest } from '../model/manifest.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { Drift, ImageResolution } from '../plan/plan.ts';
import type { CreateJournal } from '../status/create-journal.ts';
import type { ResourceStatus, StateStore } from '../status/store.ts';
import type { ProjectContext } from './context.ts';
import type { Progressing } from './progress.ts';

/** The types the execution phases (execute, heal, wait) share: one run of a plan. */

export interface ExecuteOptions {
  cloud: OpenStackCloud;
  adapters: ReadonlyMap<string, KindAdapter>;
  /** Kinds, referenced kinds first: the reverse is the order to delete pruned objects in. */
  kindOrder: string[];
  /** The kinds each kind references (kind-order.ts): a pruned object waits for the deletion of the pruned objects whose kinds reference its kind. */
  kindDeps: ReadonlyMap<string, ReadonlySet<string>>;
  owner: string;
  projectPrefix: string;
  domainId: string;
  role: string;
  revision: string;
  concurrency: number;
  /** How long to wait for an object to become ready (a server ACTIVE, an image active). */
  readyTimeoutMs: number;
  /**
   * Progress by requeue (the controller): an object OpenStack is still working on is recorded as
   * progressing and the run goes on without waiting for it (its dependents wait for the next run);
   * the outcome's `progressing` says when to look again. Absent = the run waits (standalone apply).
   */
  requeue?: boolean;
  /** Retries of an action after a transient OpenStack error (5xx, 409 busy, quota). */
  transientRetries: number;
  resources: Record<string, ResourceStatus>;
  state: StateStore;
  /** Where creates in flight are recorded, so a process started after a kill -9 waits for them (status/create-journal.ts). */
  journal?: CreateJournal;
  events: EventSink;
  signal?: AbortSignal;
  /** A namespace that left the revision has its project deleted once pruning emptied it (standalone mode; the controller deletes projects with their namespace). */
  deleteEmptyProjects?: boolean;
  /** The fast pass: project role grants the last full pass saw are not checked again (known-projects.ts). */
  trustKnownProjects?: boolean;
}

export interface ApplyError {
  address: string;
  code: string;
  message: string;
  requestId?: string;
}

/** What a run did, counted: the report, its per-kind breakdown and the outcome share these. */
export interface RunCounts {
  created: number;
  updated: number;
  replaced: number;
  deleted: number;
  healed: number;
  unchanged: number;
}

export interface KindCounts extends RunCounts {
  errors: number;
}

export interface Outcome extends RunCounts {
  errors: ApplyError[];
  drift: Drift[];
  warnings: string[];
  images: ImageResolution[];
  kinds: Record<string, KindCounts>;
  /** Objects OpenStack is still working on (requeue mode): not errors; look again after their `afterMs`. */
  progressing: Progressing[];
}

/** One declared object while a plan runs. */
export interface Node {
  address: string;
  m: Manifest;
  adapter: KindAdapter;
  pc: ProjectContext;
  ref: string;
  remote?: Remote;
  imported: boolean;
  /** An existing object taken over (`import.adopt`) that does not carry our marker yet. */
  adopting?: boolean;
  /** The old object was deleted in phase A: the create is the second half of a replacement. */
  replacing?: boolean;
}

/** What the phases share: options, the outcome being counted, the event sink with the run's revision. */
export interface Run {
  opts: ExecuteOptions;
  out: Outcome;
  emit(type: EngineEventType, address: string, reason: string, message: string, extra?: Partial<EngineEvent>): void;
  settle(address: string, status: ResourceStatus | undefined): Promise<void>;
  retrying<T>(address: string | undefined, action: () => Promise<T>): Promise<T>;
  count(address: string, key: keyof KindCounts): void;
  /** Creates with the marker, adopting a lost answer; batched into bulk creates where the kind offers them (act/bulk.ts). */
  create?(node: Node, desired: Record<string, unknown>, marker: Marker): Promise<Remote>;
  /** Bounds the calls that follow a create (rules, tags, waiting), per service like the graph walk: a bulk's objects share one slot of it, not their follow-ups. */
  bounded?<T>(node: Node, work: () => Promise<T>): Promise<T>;
}
