import { useState } from 'preact/hooks';
import { routes, type LoginRequest, type WhoAmI } from '../../../agent/view/api.ts';
import { ApiError, postJson } from '../client.ts';
import { navigate } from '../router.ts';

// Sign-in with what the cluster already trusts: a bearer token as kubectl sends it (a
// ServiceAccount token, or an OIDC ID token where the API server trusts the issuer). The server
// checks it with the API server and keeps it in memory; the browser keeps only a session cookie.

export function SignIn(props: { next: string; onSignedIn: (user: string) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  async function submit(e: Event): Promise<void> {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const body: LoginRequest = { token: token.trim() };
      const who = await postJson<WhoAmI>(routes.login, body);
      setToken('');
      props.onSignedIn(who.username);
      navigate(props.next.startsWith('/') && !props.next.startsWith('//') ? props.next : '/', true);
    } catch (err) {
      setError(
        err instanceof ApiError && err.status === 401
          ? 'The API server does not accept this token (expired, or not for this cluster).'
          : err instanceof Error
            ? err.message
            : String(err),
      );
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="sign-in" aria-labelledby="sign-in-h">
      <h1 id="sign-in-h" tabIndex={-1}>
        Sign in
      </h1>
      <p>
        Paste a bearer token the Kubernetes API server accepts, as <code>kubectl</code> sends it. Every page you open is read with this identity: you see what
        Kubernetes RBAC lets it read, nothing more.
      </p>
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">Bearer token</label>
        <textarea
          id="token"
          name="token"
          rows={4}
          required
          autoComplete="off"
          spellcheck={false}
          value={token}
          aria-describedby="token-how"
          aria-invalid={error ? 'true' : undefined}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <div id="token-how" class="how">
          <p>Get one for a ServiceAccount (here a tenant of team-a, valid one hour):</p>
          <pre>
            <code>kubectl create token &lt;serviceaccount&gt; -n team-a --duration 1h</code>
          </pre>
          <p>
            With OIDC sign-in configured on the API server, paste your ID token (for example <code>kubectl oidc-login get-token</code>'s{' '}
            <code>status.token</code>).
          </p>
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </section>
  );
}
