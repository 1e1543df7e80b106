import { bulkTimeoutMs, maxBulk } from '../../act/bulk.ts';
import type { CreateJournal } from '../../status/create-journal.ts';

/** Between the early record and the create leaving: the observe, the plan, a slot (a kill in it costs the next run this much more wait, never a duplicate). */
export const earlyMarginMs = 60_000;

/**
 * A targeted run's create journal (issue 33: `kubectl apply` → first write).
 * The objects the run was started for and that have no OpenStack object yet
 * are recorded as one entry while the run observes and plans, instead of in
 * a ConfigMap write between the plan and the create: their creates find the
 * line already stored and leave at once. The rule of the journal holds (a
 * create leaves only once its line is stored: `begin` waits for the early
 * write); what it costs is the other, recoverable window, which grows from
 * the write-to-send gap to the observe: a kill -9 in it leaves an entry for
 * creates never sent, and the next run waits out its deadline for them (or
 * adopts them if an outside copy is found).
 *
 * The run's own entry is not among what it waits for: `landing` answers what
 * the journal held before the early write. Creates of other addresses go to
 * the journal as usual. `close` (the run's end) ends the early entry, unless
 * one of its creates lost its answer (journaled.ts does not end such an
 * entry): then it stays until its deadline, as any lost create's does.
 */
export class EarlyJournal implements CreateJournal {
  readonly #inner: CreateJournal;
  readonly #addresses: ReadonlySet<string>;
  readonly #before: Promise<Map<string, number>>;
  readonly #entry: Promise<string | undefined>;
  /** Creates of the early entry begun and not yet ended (their answers not in). */
  readonly #open = new Set<string>();
  #next = 0;
  #closed = false;

  constructor(inner: CreateJournal, addresses: readonly string[], until: number) {
    this.#inner = inner;
    this.#addresses = new Set(addresses);
    // What may be landing before this run's own line: read first (memory after the process's first read).
    this.#before = inner.landing();
    // A failed early write is not fatal: the creates record themselves as they leave (begin below).
    this.#entry = this.#before.then(
      () => inner.begin(addresses, until).catch(() => undefined),
      () => undefined,
    );
  }

  async begin(addresses: readonly string[], until: number): Promise<string> {
    if (!this.#closed && addresses.length > 0 && addresses.every((a) => this.#addresses.has(a))) {
      const entry = await this.#entry;
      if (entry !== undefined && !this.#closed) {
        const id = `early.${(this.#next++).toString(36)}`;
        this.#open.add(id);
        return id;
      }
    }
    return this.#inner.begin(addresses, until);
  }

  end(entry: string): Promise<void> {
    if (this.#open.delete(entry)) return Promise.resolve();
    return this.#inner.end(entry);
  }

  landing(): Promise<Map<string, number>> {
    return this.#before;
  }

  landed(addresses: readonly string[]): Promise<void> {
    return this.#inner.landed(addresses);
  }

  /** The run ended: its early entry ends too, unless a create of it may still land. */
  async close(): Promise<void> {
    this.#closed = true;
    const entry = await this.#entry;
    if (entry !== undefined && this.#open.size === 0) await this.#inner.end(entry);
  }
}

/**
 * The early journal of a targeted run's new objects, lasting as long as their creates may (sent as one
 * bulk) plus the margin; none (the journal as it is) for no new object or for more than one bulk's worth:
 * a burst is not what waits on latency, and after a kill its early entry would hold the next run for
 * creates never sent until a deadline that grows with the burst (40 objects: 12 min).
 */
export function earlyJournal(
  journal: CreateJournal,
  addresses: readonly string[],
  timeoutMs: number,
): (CreateJournal & { close(): Promise<void> }) | undefined {
  if (addresses.length === 0 || addresses.length > maxBulk) return undefined;
  return new EarlyJournal(journal, addresses, Date.now() + bulkTimeoutMs(timeoutMs, addresses.length) + earlyMarginMs);
}
