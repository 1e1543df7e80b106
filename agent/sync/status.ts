import { readFile } from 'node:fs/promises';
import { setCondition, type Condition as ResourceCondition } from '../status/conditions.ts';
import { writeJsonAtomic } from '../util/atomic-write.ts';
import type { Trigger } from './scheduler.ts';

/**
 * What one Sync reports (the standalone twin of the Sync kind's status):
 * kstatus conditions, the revisions, and the last 10 runs. Kept in the
 * state dir so a restarted agent still knows the last good revision.
 */

/** kstatus' three, plus SourceReady: the fetch side's own verdict (Flux keeps source and apply status apart). */
export type ConditionType = ResourceCondition['type'] | 'SourceReady';

export interface Condition extends Omit<ResourceCondition, 'type'> {
  type: ConditionType;
}

export type RunResult = 'Succeeded' | 'Failed' | 'Rejected' | 'Held';

export interface RunRecord {
  revision: string;
  trigger: Trigger;
  startedAt: string;
  /** Duration as in the schema (e.g. "1.25s"). */
  duration: string;
  durationMs: number;
  result: RunResult;
  message?: string;
  counts?: Record<string, number>;
}

export interface SyncStatus {
  name: string;
  /** Where from, without credentials. */
  source: string;
  suspended: boolean;
  /** The newest revision the source handed out (the fetch step's artifact). */
  lastFetchedRevision?: string;
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  /** The last fetched revision that failed validation, and why (file:line:col first, as the repository names the file). */
  rejectedRevision?: string;
  rejectedBecause?: string[];
  /** Private copy of the last applied revision's manifests: what drift correction re-applies. */
  lastGoodDir?: string;
  lastSyncTime?: string;
  nextRunAt?: string;
  conditions: Condition[];
  /** Newest first, at most 10. */
  history: RunRecord[];
}

/**
 * Where a Sync's status lives. Standalone: a JSON file in the state dir
 * (StatusStore). In the cluster: the Sync custom resource's status
 * subresource. The runner changes `status` and the conditions in memory and
 * calls `save` at the points a reader should see (start of a step, end of a
 * run); a store may coalesce writes. Nothing in it is a secret.
 */
export interface SyncStatusStore {
  readonly status: SyncStatus;
  condition(type: ConditionType, status: Condition['status'], reason: string, message: string): void;
  get(type: ConditionType): Condition | undefined;
  /** Adds a run to the history (newest first, bounded) and stamps lastSyncTime. */
  record(run: RunRecord): void;
  save(): Promise<void>;
}

const historyLength = 10;
const conditionOrder: ConditionType[] = ['Ready', 'Reconciling', 'Stalled', 'SourceReady'];

/** The in-memory half every SyncStatusStore shares: conditions in kstatus order, a bounded history. */
export abstract class SyncStatusBase implements SyncStatusStore {
  abstract readonly status: SyncStatus;

  condition(type: ConditionType, status: Condition['status'], reason: string, message: string): void {
    const next = setCondition<Condition>(this.status.conditions, { type, status, reason, message });
    this.status.conditions = next.sort((a, b) => conditionOrder.indexOf(a.type) - conditionOrder.indexOf(b.type));
  }

  get(type: ConditionType): Condition | undefined {
    return this.status.conditions.find((c) => c.type === type);
  }

  record(run: RunRecord): void {
    this.status.history = [run, ...this.status.history].slice(0, historyLength);
    this.status.lastSyncTime = new Date().toISOString();
  }

  abstract save(): Promise<void>;
}

/** A Sync status as a file (standalone). */
export class StatusStore extends SyncStatusBase {
  readonly file: string;
  readonly status: SyncStatus;

  private constructor(file: string, status: SyncStatus) {
    super();
    this.file = file;
    this.status = status;
  }

  /** The saved status, or a fresh one; a Sync starts Unknown until its first run. */
  static async open(file: string, name: string, source: string, suspended: boolean): Promise<StatusStore> {
    let saved: Partial<SyncStatus> = {};
    try {
      saved = JSON.parse(await readFile(file, 'utf8')) as Partial<SyncStatus>;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const status: SyncStatus = { conditions: [], history: [], ...saved, name, source, suspended };
    const store = new StatusStore(file, status);
    if (!status.conditions.some((c) => c.type === 'Ready')) store.condition('Ready', 'Unknown', 'Pending', 'waiting for the first run');
    if (suspended) store.condition('Reconciling', 'False', 'Suspended', 'suspend: true — no fetch, no apply, no drift correction');
    return store;
  }

  /** A crash never leaves half a status. */
  async save(): Promise<void> {
    await writeJsonAtomic(this.file, this.status);
  }
}
