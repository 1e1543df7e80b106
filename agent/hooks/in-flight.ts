import type { ServerResponse } from 'node:http';

/**
 * How many hook requests (`POST /hooks…`) either front end serves at once.
 * Each may hold up to 1 MiB of body (http-json.ts) and a secret lookup;
 * beyond this many, a sender is answered 429 before its body is read, so a
 * flood of slow or unauthenticated POSTs cannot pile up memory or work.
 */
export const maxHooksInFlight = 16;

/** The hook requests being served; a request over the cap is refused with 429 and Retry-After. */
export class HookSlots {
  private busy = 0;

  private readonly limit: number;

  constructor(limit = maxHooksInFlight) {
    this.limit = limit;
  }

  get inFlight(): number {
    return this.busy;
  }

  /** Runs `serve` in a slot, or answers 429 (the connection closed: the unread body is not drained) when none is free. */
  async run(res: ServerResponse, serve: () => Promise<void>): Promise<void> {
    if (this.busy >= this.limit) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' });
      res.end(`${JSON.stringify({ error: `more than ${this.limit} hook requests in flight; retry later` })}\n`);
      return;
    }
    this.busy++;
    try {
      await serve();
    } finally {
      this.busy--;
    }
  }
}
