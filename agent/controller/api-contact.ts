/** What `/healthz` says about the API server: whether this replica still gets answers from it. */
export interface ApiContactVerdict {
  ok: boolean;
  /** Seconds since the last answered check (or since start, before the first). */
  sinceSeconds: number;
  /** Why the last check failed, when it did: a status code or a network error, never a credential. */
  lastError?: string;
}

export interface ApiContactOptions {
  /** One cheap request the controller's own RBAC allows (listing one namespace); rejects when it is not answered. */
  check: () => Promise<void>;
  /** How often to check. */
  periodMs: number;
  /** Unhealthy once no check was answered for this long. */
  staleAfterMs: number;
  now?: () => number;
}

/**
 * The liveness of a controller is its contact with the API server: a replica
 * whose credentials were revoked, whose RBAC binding is gone or whose
 * connection is wedged keeps serving 200 on a plain `/healthz` and never
 * acts again. Every `periodMs` it makes one request with its own identity;
 * once none was answered for `staleAfterMs`, `/healthz` fails and the kubelet
 * restarts the container (a new token, new connections, the watches listed
 * afresh). Leadership plays no part: a follower that can reach the API
 * server is healthy, it must stay up to take over. A brief blip is absorbed
 * by `staleAfterMs`, which should exceed a few periods.
 */
export class ApiContact {
  private readonly o: ApiContactOptions;
  private readonly now: () => number;
  private lastOk: number;
  private lastError?: string;
  private timer?: NodeJS.Timeout;
  private inFlight = false;

  constructor(o: ApiContactOptions) {
    this.o = o;
    this.now = o.now ?? Date.now;
    // Start counts as contact: the startup probe guards the first minutes.
    this.lastOk = this.now();
  }

  start(): void {
    void this.probe();
    this.timer = setInterval(() => void this.probe(), this.o.periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One check; a check still waiting for its answer is not doubled (a wedged connection must not pile requests up). */
  async probe(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      await this.o.check();
      this.lastOk = this.now();
      this.lastError = undefined;
    } catch (err) {
      this.lastError = describe(err);
    } finally {
      this.inFlight = false;
    }
  }

  verdict(): ApiContactVerdict {
    const since = this.now() - this.lastOk;
    return { ok: since <= this.o.staleAfterMs, sinceSeconds: Math.round(since / 1000), ...(this.lastError !== undefined ? { lastError: this.lastError } : {}) };
  }
}

/** The status code of a client-node ApiException, else the error's message: neither carries the token. */
function describe(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'number') return `HTTP ${err.code}`;
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
