import { readFile } from 'node:fs/promises';

export interface HealAttempt {
  step: 'reboot' | 'rebuild' | 'recreate';
  at: string;
  reason: string;
  result: 'done' | 'failed';
  error?: string;
}

export interface ResourceState {
  id?: string;
  ready?: boolean;
  message?: string;
  /** Attempts of the current failure episode (cleared once the object is healthy again). */
  heal?: HealAttempt[];
  /** Every recent attempt, kept for status after the episode ends. */
  healHistory?: HealAttempt[];
  /** Set when the heal budget is spent: the agent stops trying and says so. */
  gaveUp?: string;
  /** The manifest said `onDelete: detach`: once undeclared, the object is left in OpenStack. */
  onDelete?: 'detach';
}

export interface HistoryEntry {
  revision: string;
  startedAt: string;
  durationMs: number;
  result: 'applied' | 'failed' | 'held';
  counts: Record<string, number>;
}

/** What a standalone run remembers between runs: ids, heal attempts and recent history. OpenStack stays the inventory. */
export interface State {
  owner: string;
  lastAppliedRevision?: string;
  lastAttemptedRevision?: string;
  resources: Record<string, ResourceState>;
  history: HistoryEntry[];
}

export async function readState(file: string, owner: string): Promise<State> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as State;
    return { ...parsed, owner, resources: parsed.resources ?? {}, history: parsed.history ?? [] };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { owner, resources: {}, history: [] };
    throw err;
  }
}
