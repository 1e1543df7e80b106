import { useEffect, useState } from 'preact/hooks';

// History-API routing: every page has its own URL (shareable, back/forward work); the server
// answers index.html for any non-API path, so a pasted link opens the same page.

/** A page's place: the pattern's name and the URL's decoded parts. */
export interface Place {
  page: PageName;
  params: Record<string, string>;
  query: URLSearchParams;
}

export type PageName = 'overview' | 'sync' | 'plan' | 'namespace' | 'object' | 'images' | 'cloud' | 'signIn' | 'notFound';

const patterns: [PageName, RegExp, string[]][] = [
  ['overview', /^\/$/, []],
  ['signIn', /^\/sign-in$/, []],
  ['sync', /^\/syncs\/([^/]+)$/, ['name']],
  ['plan', /^\/syncs\/([^/]+)\/plan$/, ['name']],
  // A tenant's NamespaceSync: before the object pattern, which `syncs` as a kind would match.
  ['sync', /^\/namespaces\/([^/]+)\/syncs\/([^/]+)$/, ['namespace', 'name']],
  ['plan', /^\/namespaces\/([^/]+)\/syncs\/([^/]+)\/plan$/, ['namespace', 'name']],
  ['namespace', /^\/namespaces\/([^/]+)$/, ['namespace']],
  ['object', /^\/namespaces\/([^/]+)\/([^/]+)\/([^/]+)$/, ['namespace', 'kind', 'name']],
  ['images', /^\/images$/, []],
  ['cloud', /^\/clouds\/([^/]+)$/, ['name']],
];

export function match(pathname: string, search: string): Place {
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  const query = new URLSearchParams(search);
  for (const [page, re, names] of patterns) {
    const m = re.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    names.forEach((n, i) => (params[n] = decodeURIComponent(m[i + 1] ?? '')));
    return { page, params, query };
  }
  return { page: 'notFound', params: {}, query };
}

/** Builds a page's URL from its parts (each part escaped). */
export const href = {
  overview: (): string => '/',
  signIn: (next?: string): string => (next && next !== '/' && !next.startsWith('/sign-in') ? `/sign-in?next=${encodeURIComponent(next)}` : '/sign-in'),
  /** A cluster Sync's page, or with `ns` a tenant's NamespaceSync's. */
  sync: (name: string, ns?: string): string => (ns ? `/namespaces/${enc(ns)}/syncs/${enc(name)}` : `/syncs/${enc(name)}`),
  plan: (name: string, ns?: string): string => (ns ? `/namespaces/${enc(ns)}/syncs/${enc(name)}/plan` : `/syncs/${enc(name)}/plan`),
  namespace: (ns: string): string => `/namespaces/${enc(ns)}`,
  object: (ns: string, kind: string, name: string): string => `/namespaces/${enc(ns)}/${enc(kind)}/${enc(name)}`,
  images: (ns?: string): string => (ns ? `/images?namespace=${enc(ns)}` : '/images'),
  cloud: (name: string): string => `/clouds/${enc(name)}`,
};

/** A Sync page's live scope (api.ts, /api/events): a cluster Sync's, or a tenant's NamespaceSync's. */
export function syncScope(name: string, namespace?: string): string {
  return namespace ? `nssync:${namespace}/${name}` : `sync:${name}`;
}

function enc(s: string): string {
  return encodeURIComponent(s);
}

const listeners = new Set<() => void>();

/** To sign-in, to come back here after it (two reads refused at once both send here: once). */
export function toSignIn(): void {
  if (location.pathname === '/sign-in') return;
  navigate(href.signIn(location.pathname + location.search), true);
}

/** Moves to a URL of this app without a reload (replace: no new history entry, e.g. after sign-in). */
export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.scrollTo(0, 0);
  for (const l of listeners) l();
}

window.addEventListener('popstate', () => {
  for (const l of listeners) l();
});

/** The current place; re-renders on navigate() and on back/forward. */
export function usePlace(): Place {
  const [place, setPlace] = useState(() => match(location.pathname, location.search));
  useEffect(() => {
    const update = (): void => setPlace(match(location.pathname, location.search));
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return place;
}

/** An in-app link's click: left button, no modifier (others open a tab as the browser does). */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest('a');
  if (!a || a.target || a.origin !== location.origin || a.hasAttribute('download')) return;
  if (a.pathname.startsWith('/api/')) return;
  e.preventDefault();
  navigate(a.pathname + a.search + a.hash);
}
