import { randomBytes } from 'node:crypto';
import type { PersonView } from './reader.ts';
import type { Identity } from './user-client.ts';

/** One signed-in person: who the API server says they are and the client made with their token. */
export interface Session {
  id: string;
  who: Identity;
  /** The person's reads, made with their token (user-client.ts); the token lives only in its client, in memory. */
  view: PersonView;
  expiresAt: number;
  lastUsed: number;
}

/**
 * The view's sessions, in this process's memory only: a random id (the
 * cookie) → the person's client. Nothing is written anywhere, so a restart
 * signs everyone out; a session ends after `ttlMs` (at most the token's own
 * life: the API server then refuses it and the view answers 401) or
 * `idleMs` without a request.
 */
export class SessionStore {
  readonly #sessions = new Map<string, Session>();
  readonly #ttlMs: number;
  readonly #idleMs: number;
  readonly #now: () => number;

  constructor(opts: { ttlMs?: number; idleMs?: number; now?: () => number } = {}) {
    this.#ttlMs = opts.ttlMs ?? 8 * 3600_000;
    this.#idleMs = opts.idleMs ?? 3600_000;
    this.#now = opts.now ?? Date.now;
  }

  open(who: Identity, view: PersonView): Session {
    this.sweep();
    const now = this.#now();
    const s: Session = { id: randomBytes(32).toString('base64url'), who, view, expiresAt: now + this.#ttlMs, lastUsed: now };
    this.#sessions.set(s.id, s);
    return s;
  }

  get(id: string | undefined): Session | undefined {
    if (!id) return undefined;
    const s = this.#sessions.get(id);
    const now = this.#now();
    if (!s || s.expiresAt <= now || now - s.lastUsed > this.#idleMs) {
      if (s) this.#sessions.delete(id);
      return undefined;
    }
    s.lastUsed = now;
    return s;
  }

  close(id: string | undefined): void {
    if (id) this.#sessions.delete(id);
  }

  get size(): number {
    return this.#sessions.size;
  }

  private sweep(): void {
    const now = this.#now();
    for (const [id, s] of this.#sessions) if (s.expiresAt <= now || now - s.lastUsed > this.#idleMs) this.#sessions.delete(id);
  }
}
