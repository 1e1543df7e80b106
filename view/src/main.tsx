import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { routes, type WhoAmI } from '../../agent/view/api.ts';
import { ApiError, getJson, postJson } from './client.ts';
import { Layout } from './parts/layout.tsx';
import { NotFound } from './parts/state.tsx';
import { href, navigate, toSignIn, usePlace, type Place } from './router.ts';
import { CloudPage } from './pages/cloud.tsx';
import { ImagesPage } from './pages/images.tsx';
import { NamespacePage } from './pages/namespace.tsx';
import { ObjectPage } from './pages/object.tsx';
import { Overview } from './pages/overview.tsx';
import { PlanPage } from './pages/plan.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { SyncPage } from './pages/sync.tsx';
import './styles.css';

// The web view's entry: who is signed in (a 401 anywhere sends the page to sign-in and back),
// which page the URL names, and the frame around it.

function Page(props: { place: Place; onSignedIn: (user: string) => void }) {
  const { place } = props;
  const p = place.params;
  switch (place.page) {
    case 'signIn':
      return <SignIn next={place.query.get('next') ?? '/'} onSignedIn={props.onSignedIn} />;
    case 'overview':
      return <Overview />;
    case 'sync':
      return <SyncPage key={`${p['namespace'] ?? ''}/${p['name']}`} name={p['name'] ?? ''} namespace={p['namespace']} />;
    case 'plan':
      return <PlanPage key={`${p['namespace'] ?? ''}/${p['name']}`} name={p['name'] ?? ''} namespace={p['namespace']} />;
    case 'namespace':
      return <NamespacePage key={p['namespace']} namespace={p['namespace'] ?? ''} />;
    case 'object':
      return <ObjectPage key={`${p['namespace']}/${p['kind']}/${p['name']}`} namespace={p['namespace'] ?? ''} kind={p['kind'] ?? ''} name={p['name'] ?? ''} />;
    case 'images':
      return <ImagesPage namespace={place.query.get('namespace') ?? undefined} />;
    case 'cloud':
      return <CloudPage key={p['name']} name={p['name'] ?? ''} />;
    case 'notFound':
      return <NotFound />;
  }
}

function App() {
  const place = usePlace();
  const [user, setUser] = useState<string | undefined>(undefined);

  useEffect(() => {
    if (place.page === 'signIn') return;
    getJson<WhoAmI>(routes.whoami).then(
      (w) => setUser(w.mode === 'loopback' ? 'local (loopback)' : w.username),
      (e: unknown) => {
        if (e instanceof ApiError && e.status === 401) toSignIn();
      },
    );
  }, [place.page === 'signIn']);

  const loadedOnce = useRef(false);
  useEffect(() => {
    const title = document.querySelector('main h1')?.textContent;
    document.title = title ? `${title} · KupenStack` : 'KupenStack';
    // After an in-app navigation (not the first load, where Tab starts at the skip link), focus the
    // new page's heading (or main) so keyboard and screen reader users start there.
    if (!loadedOnce.current) {
      loadedOnce.current = true;
      return;
    }
    const h = document.querySelector<HTMLElement>('main h1') ?? document.querySelector<HTMLElement>('main');
    h?.focus({ preventScroll: true });
  }, [place]);

  async function signOut(): Promise<void> {
    await postJson(routes.logout, {}).catch(() => undefined);
    setUser(undefined);
    navigate(href.signIn(), true);
  }

  return (
    <Layout page={place.page} user={user} onSignOut={() => void signOut()}>
      <Page place={place} onSignedIn={setUser} />
    </Layout>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
