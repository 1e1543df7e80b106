import cron, { type ScheduledTask } from 'node-cron';
import { cronExpression } from './settings.ts';

/** Why a run started: shown in logs, status history and metrics. */
/**
 * What started a run; 'dependency': a Sync this one depends on changed (it may be Ready now);
 * 'health': a run asked to look again at its applied objects (`wait`, progress by requeue).
 */
export type Trigger = 'startup' | 'interval' | 'retry' | 'schedule' | 'webhook' | 'watch' | 'registry' | 'dependency' | 'health';

export interface ScheduleOptions {
  intervalMs: number;
  retryIntervalMs: number;
  timeoutMs: number;
  /** Cron expression (UTC) for extra runs. */
  schedule?: string;
  suspend: boolean;
  /** ± share of the delay drawn at random, so many agents or Syncs do not hit the Git server in step. */
  jitter?: number;
}

/**
 * Triggers whose run does part of the work (a registry notification applies
 * only the Images it names): they leave the clock alone, so the full pass
 * stays on its interval however often they come, and give way to a full run
 * queued behind them.
 */
const partialTriggers: ReadonlySet<Trigger> = new Set<Trigger>(['registry']);

/** A run says whether it succeeded; the delay to the next one follows from that. */
export type RunFn = (trigger: Trigger, signal: AbortSignal) => Promise<boolean>;

/**
 * The delay before the next run: the interval (± jitter) after a success;
 * after the n-th failure in a row, retryInterval × 2^(n-1), capped at the
 * interval (or at retryInterval when that is the longer one), ± jitter.
 */
export function nextDelay(ok: boolean, failures: number, o: Pick<ScheduleOptions, 'intervalMs' | 'retryIntervalMs' | 'jitter'>, random = Math.random): number {
  const jitter = o.jitter ?? 0.1;
  const base = ok ? o.intervalMs : Math.min(o.retryIntervalMs * 2 ** Math.max(0, failures - 1), Math.max(o.intervalMs, o.retryIntervalMs));
  return Math.max(0, Math.round(base * (1 + jitter * (2 * random() - 1))));
}

/**
 * One Sync's clock: never two runs at once (a trigger during a run queues
 * exactly one more), each run bounded by the timeout, nothing at all while
 * suspended, and a stop that lets the current run finish for a grace period
 * before aborting it.
 */
export class Scheduler {
  private timer?: NodeJS.Timeout;
  private task?: ScheduledTask;
  private running?: Promise<void>;
  private pending?: Trigger;
  private failures = 0;
  /** Asked by the run in progress (lookAgain): the next run after this delay, neither a success's interval nor a failure's backoff. */
  private again?: number;
  private stopped = false;
  private readonly shutdown = new AbortController();
  /** When the next timed run is due (for status). */
  nextRunAt?: Date;

  private readonly options: ScheduleOptions;
  private readonly run: RunFn;
  private readonly onError: (err: unknown) => void;

  constructor(options: ScheduleOptions, run: RunFn, onError: (err: unknown) => void = () => {}) {
    this.options = options;
    this.run = run;
    this.onError = onError;
  }

  get suspended(): boolean {
    return this.options.suspend;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  start(): void {
    if (this.options.suspend || this.stopped) return;
    if (this.options.schedule)
      this.task = cron.schedule(cronExpression(this.options.schedule), () => this.trigger('schedule'), { timezone: 'Etc/UTC', noOverlap: true });
    this.trigger('startup');
  }

  /** Called by the run in progress: it is not done, run again (trigger 'health') after `afterMs` instead of the usual delay. */
  lookAgain(afterMs: number): void {
    this.again = afterMs;
  }

  /** Run now (or right after the current run). Ignored while suspended or stopping. */
  trigger(trigger: Trigger): boolean {
    if (this.options.suspend || this.stopped) return false;
    const partial = partialTriggers.has(trigger);
    if (this.running) {
      // A full run does a partial one's work too (the Images it names are due whatever their interval).
      if (this.pending === undefined || (partialTriggers.has(this.pending) && !partial)) this.pending = trigger;
      return true;
    }
    if (!partial) this.clearTimer();
    this.running = this.execute(trigger).finally(() => {
      this.running = undefined;
      const next = this.pending;
      this.pending = undefined;
      if (next && !this.stopped) this.trigger(next);
    });
    return true;
  }

  private async execute(trigger: Trigger): Promise<void> {
    const signal = AbortSignal.any([this.shutdown.signal, AbortSignal.timeout(this.options.timeoutMs)]);
    let ok = false;
    try {
      ok = await this.run(trigger, signal);
    } catch (err) {
      this.onError(err);
    }
    const again = this.again;
    this.again = undefined;
    if (again !== undefined && !this.stopped) {
      this.nextRunAt = new Date(Date.now() + again);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.trigger('health');
      }, again);
      return;
    }
    if (partialTriggers.has(trigger)) {
      // The timed full run stays where it was; only when none is due (never started, or it fired meanwhile and is pending) is one set.
      if (this.stopped || this.timer !== undefined || this.pending !== undefined) return;
    } else this.failures = ok ? 0 : this.failures + 1;
    if (this.stopped) return;
    const delay = nextDelay(ok, this.failures, this.options);
    this.nextRunAt = new Date(Date.now() + delay);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.trigger(ok ? 'interval' : 'retry');
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.nextRunAt = undefined;
  }

  /** No new runs; the current one may finish within graceMs, then it is aborted (each step stops at a safe point). */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    this.pending = undefined;
    this.clearTimer();
    if (this.task) await this.task.destroy();
    const current = this.running;
    if (!current) return;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), graceMs)));
    if ((await Promise.race([current.then(() => 'done' as const), graceOver])) === 'timeout') this.shutdown.abort(new Error('the agent is shutting down'));
    clearTimeout(timer);
    await current;
  }

  /** Abort the current run now (second signal). */
  abort(): void {
    this.stopped = true;
    this.shutdown.abort(new Error('the agent is shutting down'));
  }
}
