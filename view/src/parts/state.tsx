import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import type { ApiError, Loaded } from '../client.ts';
import { href, toSignIn } from '../router.ts';

// What a page shows while its data loads or when the server refuses: 403 is its own page (the
// identity may not read this), so a URL of another team's namespace says so instead of "empty".

export function Forbidden(props: { message?: string }) {
  return (
    <section class="refusal" aria-labelledby="forbidden-h">
      <h1 id="forbidden-h" tabIndex={-1}>
        403 — not allowed
      </h1>
      <p>Your identity may not read this. What you see here is what Kubernetes RBAC grants the token you signed in with.</p>
      {props.message && (
        <p class="detail">
          The API server said: <code>{props.message}</code>
        </p>
      )}
      <p>
        <a href={href.overview()}>Back to the Syncs you can see</a>
      </p>
    </section>
  );
}

export function NotFound(props: { what?: string }) {
  return (
    <section class="refusal" aria-labelledby="nf-h">
      <h1 id="nf-h" tabIndex={-1}>
        Not found
      </h1>
      <p>{props.what ?? 'There is no page at this address.'}</p>
      <p>
        <a href={href.overview()}>Back to the Syncs</a>
      </p>
    </section>
  );
}

/** 401: the session ended (or never began): to sign-in, and back here after it. */
function SignInAgain() {
  useEffect(() => toSignIn(), []);
  return (
    <p role="status">
      <a href={href.signIn(location.pathname + location.search)}>Sign in</a> to see this page.
    </p>
  );
}

export function Failed(props: { error: ApiError }) {
  if (props.error.status === 401) return <SignInAgain />;
  if (props.error.status === 403) return <Forbidden message={props.error.message} />;
  if (props.error.status === 404) return <NotFound what={props.error.message} />;
  return (
    <section class="refusal" role="alert">
      <h1 tabIndex={-1}>Could not load this page</h1>
      <p>
        <code>{props.error.status || 'network'}</code> {props.error.message}
      </p>
    </section>
  );
}

/** Renders `children(data)` once loaded; the loading and error states otherwise. */
export function Show<T>(props: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  const l = props.loaded;
  useEffect(() => {
    // The tab's title follows the page's heading (history entries and tabs say which page).
    const h1 = document.querySelector('main h1')?.textContent?.trim();
    document.title = h1 ? `${h1} · KupenStack` : 'KupenStack';
  }, [l.state]);
  if (l.state === 'loading')
    return (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  if (l.state === 'error') return <Failed error={l.error} />;
  return <>{props.children(l.data)}</>;
}

/** The polite live region that says when the page last changed from the server's watch. */
export function Freshness(props: { at: Date | undefined }) {
  return (
    <p class="fresh" aria-live="polite" role="status">
      {props.at ? `Live · updated ${props.at.toLocaleTimeString()}` : 'Live'}
    </p>
  );
}
