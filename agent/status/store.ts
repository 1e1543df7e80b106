import type { Condition } from './conditions.ts';
import type { HistoryEntry, ResourceState } from './state.ts';

/**
 * Where the engine keeps what OpenStack cannot tell it: per resource the id
 * it settled on, heal attempts and conditions; per owner the revisions and
 * recent runs. Standalone: one JSON file per owner (FileStateStore). In the
 * cluster: each custom resource's status subresource.
 *
 * Contract:
 * - `load` is called once at the start of a run and returns every resource
 *   entry this owner has (addresses as in Manifest.address).
 * - `putResource` is called whenever a resource settles during the run
 *   (created, updated, healed, failed, deleted = `undefined`), so status is
 *   visible while a long run goes on. It MUST NOT throw for a resource whose
 *   backing object is gone (a deleted CR): the store drops the write.
 * - `finishRun` is called once at the end with the run's record; a store may
 *   batch the per-resource writes until then.
 * - No method receives a secret; implementations never log values.
 */
export interface StateStore {
  load(): Promise<StoredState>;
  putResource(address: string, state: ResourceStatus | undefined): Promise<void>;
  finishRun(run: RunSummary): Promise<void>;
}

/** A resource's engine state plus its conditions. */
export interface ResourceStatus extends ResourceState {
  conditions?: Condition[];
  /** What an operator looks for, per kind (VM power state and addresses, an Image's digest…), as the adapter reports it. */
  observed?: Record<string, unknown>;
  lastSyncTime?: string;
}

export interface StoredState {
  owner: string;
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  resources: Record<string, ResourceStatus>;
  history: HistoryEntry[];
}

export interface RunSummary {
  /** The source's revision (`main@sha1:…`, `dir@sha256:…`, `k8s@<resourceVersion>`): one string per run, everywhere. */
  revision: string;
  startedAt: string;
  durationMs: number;
  result: HistoryEntry['result'];
  counts: Record<string, number>;
}
