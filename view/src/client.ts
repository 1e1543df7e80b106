import { useEffect, useRef, useState } from 'preact/hooks';
import { csrfHeader, routes } from '../../agent/view/api.ts';

// The view's one door to its server (agent/view/): JSON reads under /api/ with the session cookie
// that /api/login set (the bearer token itself stays on the server), and live changes over SSE.

/** An answer the page shows as its own state: not signed in, not allowed (403), not there, or broken. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

async function messageOf(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { message?: unknown; error?: unknown };
    const m = body.message ?? body.error;
    return typeof m === 'string' ? m : res.statusText;
  } catch {
    return res.statusText;
  }
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' }, signal: signal ?? null });
  if (!res.ok) throw new ApiError(res.status, await messageOf(res));
  return (await res.json()) as T;
}

/** POSTs JSON; the custom header makes the request one a cross-site form cannot send (CSRF). */
export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', accept: 'application/json', [csrfHeader]: '1' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new ApiError(res.status, await messageOf(res));
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

export type Loaded<T> = { state: 'loading' } | { state: 'ok'; data: T; at: Date } | { state: 'error'; error: ApiError };

/**
 * Reads `path` and reads it again whenever the server says something it shows changed (`live`:
 * the SSE scope naming what to watch; undefined: read once). The previous data stays on screen
 * while a re-read runs, so a live update never blanks the page. A change during a read never
 * aborts it (a busy run's stream of status writes would starve the page): one more read follows.
 */
export function useApi<T>(path: string | undefined, live?: string): Loaded<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const reader = useRef<{ again: () => void }>({ again: () => undefined });
  useEffect(() => {
    if (!path) return;
    setLoaded({ state: 'loading' });
    const ctl = new AbortController();
    let busy = false;
    let pending = false;
    const read = (): void => {
      busy = true;
      pending = false;
      getJson<T>(path, ctl.signal)
        .then(
          (data) => setLoaded({ state: 'ok', data, at: new Date() }),
          (e: unknown) => {
            if (ctl.signal.aborted) return;
            setLoaded({ state: 'error', error: e instanceof ApiError ? e : new ApiError(0, e instanceof Error ? e.message : String(e)) });
          },
        )
        .finally(() => {
          busy = false;
          if (pending && !ctl.signal.aborted) read();
        });
    };
    reader.current = {
      again: () => {
        if (busy) pending = true;
        else read();
      },
    };
    read();
    return () => ctl.abort();
  }, [path]);
  useLive(live, () => reader.current.again());
  return loaded;
}

/**
 * Calls `onChange` (at most every 200 ms) for each `change` event the server streams for `scope`
 * (`overview`, `sync:<name>`, `namespace:<ns>`, `images`, `cloud:<name>`); a `denied` event ends it.
 */
export function useLive(scope: string | undefined, onChange: () => void): void {
  const cb = useRef(onChange);
  cb.current = onChange;
  useEffect(() => {
    if (scope === undefined || typeof EventSource === 'undefined') return;
    const src = new EventSource(routes.events([scope]), { withCredentials: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const fire = (): void => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        cb.current();
      }, 200);
    };
    src.onmessage = fire;
    src.addEventListener('change', fire);
    src.addEventListener('denied', () => src.close());
    return () => {
      if (timer) clearTimeout(timer);
      src.close();
    };
  }, [scope]);
}
