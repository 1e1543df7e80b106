import { ClockedCounters, type ClockedCall } from '../call-counts.ts';
import type { ApiCounters } from '../../openstack/counters.ts';

/**
 * The `timing` line of a run: each step's mark as it passes, and the first token, read and write of its
 * OpenStack calls (ClockedCounters). With several namespaces running at once a write of another may be taken
 * for this run's first: the timing is exact on a quiet controller.
 */
export class RunClock {
  readonly started = Date.now();
  readonly #ns: string;
  readonly #step: (ns: string, what: string) => void;
  readonly #marks: [string, number][] = [];
  readonly #firsts = new Map<ClockedCall, number>();

  constructor(ns: string, step: (ns: string, what: string) => void) {
    this.#ns = ns;
    this.#step = step;
  }

  readonly mark = (what: string): void => {
    this.#marks.push([what, Date.now()]);
    this.#step(this.#ns, what);
  };

  /** The engine's steps, once each (a registry notification's Images first, then the full pass: the first is the wait the user sees). */
  readonly once = (what: string): void => void (this.#marks.some(([m]) => m === what) || this.mark(what));

  /** Notes the first of each OpenStack call until the returned function is called. */
  watch(counters: ApiCounters): () => void {
    const clocked = counters instanceof ClockedCounters ? counters : undefined;
    const onCall = (call: ClockedCall, at: number): void => void (this.#firsts.has(call) || this.#firsts.set(call, at));
    clocked?.onCall.add(onCall);
    return () => void clocked?.onCall.delete(onCall);
  }

  /** The first calls join the marks: only what came before the first write's answer (the line is about the wait for it). */
  firstCalls(): void {
    const firstWrite = this.#firsts.get('write answered');
    if (firstWrite === undefined) return;
    for (const [call, label] of [
      ['token answered', 'first token'],
      ['read answered', 'first read'],
      ['write sent', 'write sent'],
    ] as const) {
      const at = this.#firsts.get(call);
      if (at !== undefined && at <= firstWrite) this.#marks.push([label, at]);
    }
    this.#marks.push(['first write', firstWrite]);
  }

  line(changedAt: number | undefined): string {
    const since = changedAt ?? this.started;
    const steps = [...(changedAt !== undefined ? [['run start', this.started] as [string, number]] : []), ...this.#marks].sort((a, b) => a[1] - b[1]);
    const from = changedAt !== undefined ? 'from the change seen' : 'from the run start';
    return `timing  ${this.#ns}: ${from} at ${new Date(since).toISOString()}: ${steps.map(([what, at]) => `${what} +${at - since} ms`).join(', ')}`;
  }
}
