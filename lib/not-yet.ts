import { KupenstackError } from './errors.ts';

/**
 * OpenStack is still working on an object an adapter acted on (a resize, a
 * power change, an extend, another worker's upload): ORC's "poll again
 * later". Thrown in requeue mode instead of a wait; the engine (agent/act)
 * records the object as progressing and the next run continues from what
 * OpenStack shows then. In lib/ so agent/glance throws it too.
 */
export class NotYet extends KupenstackError {
  readonly reason: string;
  readonly afterMs: number;
  constructor(reason: string, afterMs: number) {
    super('progress.not-yet', `not yet: ${reason}; looked at again in ${Math.ceil(afterMs / 1000)} s`);
    this.reason = reason;
    this.afterMs = afterMs;
  }
}
