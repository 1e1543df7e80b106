import { setTimeout as sleep } from 'node:timers/promises';
import { waiting as waitingFor, type Progress } from '../../lib/progress.ts';
import type { EventSink } from '../events/events.ts';
import type { CreateJournal } from '../status/create-journal.ts';

/** What one observe tells the wait: the addresses whose object is there now. */
export interface Observed<T> {
  result: T;
  owned: ReadonlySet<string>;
}

/**
 * Observe (and decide), after the creates an earlier process sent and never
 * saw answered have landed: observed again every `everyMs` until each is
 * there (and is adopted like any owned object) or its deadline passed (what
 * the killed run would have waited for the answer). Without this, a run
 * started right after a kill -9 creates again what OpenStack is still making.
 * The journal is told which of them landed. In requeue mode (the
 * controller) it looks once and answers waiting instead, so the
 * namespace's queue slot is free while OpenStack makes them.
 */
export async function afterLanding<T>(opts: {
  journal: CreateJournal | undefined;
  /** Addresses this revision declares: an entry for one it no longer declares is not waited for. */
  declared: ReadonlySet<string>;
  look: () => Promise<Observed<T>>;
  events: EventSink;
  revision: string;
  signal?: AbortSignal | undefined;
  everyMs?: number;
  now?: () => number;
  /** Progress by requeue: look once, answer waiting (look again in `everyMs`) while creates are still landing. */
  requeue?: boolean;
}): Promise<T | { waiting: Progress }> {
  const now = opts.now ?? Date.now;
  const landing = (await opts.journal?.landing()) ?? new Map<string, number>();
  for (let told = false; ;) {
    const { result, owned } = await opts.look();
    const at = now();
    const waiting = [...landing].filter(([address, until]) => until > at && opts.declared.has(address) && !owned.has(address));
    if (waiting.length === 0) {
      await opts.journal?.landed([...landing.keys()].filter((a) => owned.has(a)));
      return result;
    }
    const everyMs = opts.everyMs ?? (opts.requeue ? 2000 : 1000);
    if (!told) {
      const last = Math.max(...waiting.map(([, until]) => until));
      const shown = `${waiting
        .slice(0, 3)
        .map(([a]) => a)
        .join(', ')}${waiting.length > 3 ? ', …' : ''}`;
      const message =
        `waiting up to ${Math.ceil((last - at) / 1000)} s for ${waiting.length} creates an earlier run sent and never saw answered (${shown}): ` +
        'OpenStack may still be making them';
      opts.events({
        type: 'held',
        address: opts.revision,
        reason: 'CreatesInFlight',
        message,
        severity: 'normal',
        revision: opts.revision,
        at: new Date().toISOString(),
      });
      told = true;
    }
    if (opts.requeue) return waitingFor(`${waiting.length} creates an earlier run sent may still be landing`, everyMs);
    opts.signal?.throwIfAborted();
    await sleep(everyMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
  }
}
