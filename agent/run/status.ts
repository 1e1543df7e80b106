import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Trigger } from './scheduler.ts';

/**
 * What one Sync reports (the standalone twin of the Sync kind's status):
 * kstatus conditions, the revisions, and the last 10 runs. Kept in the
 * state dir so a restarted agent still knows the last good revision.
 */

export type ConditionType = 'Ready' | 'Reconciling' | 'Stalled';

export interface Condition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
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
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  /** The last fetched revision that failed validation, and why (file:line:col first). */
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

const historyLength = 10;

export class StatusStore {
  readonly file: string;
  readonly status: SyncStatus;

  private constructor(file: string, status: SyncStatus) {
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

  condition(type: ConditionType, status: Condition['status'], reason: string, message: string): void {
    const old = this.status.conditions.find((c) => c.type === type);
    const lastTransitionTime = old && old.status === status ? old.lastTransitionTime : new Date().toISOString();
    const next: Condition = { type, status, reason, message, lastTransitionTime };
    this.status.conditions = [...this.status.conditions.filter((c) => c.type !== type), next].sort((a, b) => order(a.type) - order(b.type));
  }

  get(type: ConditionType): Condition | undefined {
    return this.status.conditions.find((c) => c.type === type);
  }

  record(run: RunRecord): void {
    this.status.history = [run, ...this.status.history].slice(0, historyLength);
    this.status.lastSyncTime = new Date().toISOString();
  }

  /** Temporary file then rename: a crash never leaves half a status. */
  async save(): Promise<void> {
    await mkdir(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(this.status, null, 2)}\n`);
    await rename(tmp, this.file);
  }
}

function order(type: ConditionType): number {
  return type === 'Ready' ? 0 : type === 'Reconciling' ? 1 : 2;
}

export function formatDuration(ms: number): string {
  return ms >= 60_000 ? `${Math.floor(ms / 60_000)}m${((ms % 60_000) / 1000).toFixed(0)}s` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)}s`;
}
