import { backoffDelay } from '../../../lib/retry.ts';

export interface WorkQueueOptions {
  /** Quiet time after the last change before a key runs: a `kubectl apply -f dir/` of ten objects is one reconcile, not ten. */
  debounceMs: number;
  /**
   * When set, a change to a key that had none for a whole debounce window
   * runs this soon (the leading edge): one `kubectl apply` does not wait out
   * the window. The rest of a burst arrives while that run works and
   * collapses into one run after it, a debounce window after the last.
   */
  leadingMs?: number;
  /** First retry after a failed run; doubles per consecutive failure. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Keys running at once (different keys only: one key never runs twice at once). */
  concurrency: number;
  random?: () => number;
}

/**
 * A keyed work queue (one key per namespace), the controller-runtime way:
 * adds within the debounce window collapse into one run; a key never runs
 * concurrently with itself, and a change that arrives while it runs
 * schedules exactly one more run; a failed run comes back after an
 * exponential backoff that resets on success. A key added as background
 * (the periodic resync) waits behind keys added for a change, so a
 * `kubectl apply` during a resync wave does not queue behind every namespace.
 * A run may answer a delay (controller-runtime's RequeueAfter): the key
 * runs again after it, its slot free meanwhile.
 */
export class WorkQueue {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly due = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  /** Keys scheduled only for the resync; a change added meanwhile makes them urgent again. */
  private readonly background = new Set<string>();
  private stopped = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly opts: WorkQueueOptions;
  private readonly work: (key: string, run: { leading: boolean }) => Promise<void | number>;
  /** When each key last changed (an add without a delay): a key quiet for a debounce window runs on the leading edge. */
  private readonly lastChange = new Map<string, number>();
  /** Keys whose scheduled or due run is a leading-edge one (the worker is told: more of a burst may still come). */
  private readonly leading = new Set<string>();

  constructor(opts: WorkQueueOptions, work: (key: string, run: { leading: boolean }) => Promise<void | number>) {
    this.opts = opts;
    this.work = work;
  }

  /**
   * Schedules `key` for a change: after the debounce window, restarting it,
   * or at once on the leading edge (`leadingMs`); with `delayMs`, after that
   * (a requeue, a retry, the resync). `background` keys run after the others
   * that are due.
   */
  add(key: string, delayMs?: number, background = false): void {
    if (this.stopped) return;
    const change = delayMs === undefined;
    const quiet = change && this.opts.leadingMs !== undefined && Date.now() - (this.lastChange.get(key) ?? -Infinity) >= this.opts.debounceMs;
    if (change) this.lastChange.set(key, Date.now());
    this.schedule(key, delayMs ?? this.opts.debounceMs, background, quiet);
  }

  private schedule(key: string, delayMs: number, background: boolean, leading: boolean): void {
    if (!background) this.background.delete(key);
    else if (!this.timers.has(key) && !this.due.has(key)) this.background.add(key);
    if (this.running.has(key)) {
      this.dirty.add(key);
      return;
    }
    // A change while a leading-edge run is about to start joins it.
    if (this.leading.has(key) && (this.timers.has(key) || this.due.has(key))) return;
    const old = this.timers.get(key);
    if (old) clearTimeout(old);
    const lead = leading && !this.due.has(key);
    if (lead) this.leading.add(key);
    this.timers.set(
      key,
      setTimeout(
        () => {
          this.timers.delete(key);
          this.due.add(key);
          this.pump();
        },
        lead ? this.opts.leadingMs! : delayMs,
      ),
    );
  }

  /** Consecutive failures of a key (0 after a success). */
  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Resolves when nothing is scheduled, due or running. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.due.clear();
    this.background.clear();
    this.leading.clear();
    this.notifyIdle();
  }

  private isIdle(): boolean {
    return this.timers.size === 0 && this.due.size === 0 && this.running.size === 0;
  }

  private notifyIdle(): void {
    if (!this.isIdle() && !this.stopped) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private pump(): void {
    const due = [...this.due];
    for (const key of [...due.filter((k) => !this.background.has(k)), ...due.filter((k) => this.background.has(k))]) {
      if (this.running.size >= this.opts.concurrency) return;
      if (this.running.has(key)) continue;
      this.due.delete(key);
      this.background.delete(key);
      this.running.add(key);
      void this.run(key, this.leading.delete(key));
    }
  }

  private async run(key: string, leading: boolean): Promise<void> {
    let failed = false;
    let again: void | number = undefined;
    try {
      again = await this.work(key, { leading });
      this.failures.delete(key);
    } catch {
      // The worker reports its own errors (status, Events); the queue only decides when to try again.
      failed = true;
      this.failures.set(key, this.failuresOf(key) + 1);
    } finally {
      this.running.delete(key);
    }
    // Changes that came while it ran: one more run, a debounce window from now (a later change restarts it).
    if (this.dirty.delete(key)) this.schedule(key, this.opts.debounceMs, false, false);
    else if (failed) this.add(key, backoffDelay(this.failuresOf(key), this.opts.backoffBaseMs, this.opts.backoffMaxMs, this.opts.random));
    else if (typeof again === 'number') this.add(key, again);
    this.pump();
    this.notifyIdle();
  }
}
