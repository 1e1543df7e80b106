import type { ComponentChildren } from 'preact';
import { href, onLinkClick, type PageName } from '../router.ts';

// The frame of every page: a skip link, the banner with the site navigation, one <main> (the
// page's landmark, focused on navigation so a screen reader starts at the new page's heading).

const sections: { page: PageName; label: string; to: string }[] = [
  { page: 'overview', label: 'Syncs', to: href.overview() },
  { page: 'images', label: 'Images', to: href.images() },
];

export function Layout(props: { page: PageName; user: string | undefined; onSignOut: () => void; children: ComponentChildren }) {
  return (
    <div class="frame" onClick={(e) => onLinkClick(e)}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="banner">
        <a class="brand" href="/">
          KupenStack
        </a>
        <nav aria-label="Sections">
          <ul>
            {sections.map((s) => (
              <li key={s.page}>
                <a href={s.to} aria-current={props.page === s.page ? 'page' : undefined}>
                  {s.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {props.user !== undefined && (
          <div class="who">
            <span title="Every read is made with this identity">{props.user}</span>
            <button type="button" onClick={props.onSignOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
      <footer class="foot">Read-only view: what you see is what Kubernetes RBAC lets your identity read.</footer>
    </div>
  );
}

/** A trail of links above a page's heading (Syncs › sync › namespace ›). */
export function Crumbs(props: { items: { label: string; to?: string }[] }) {
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <ol>
        {props.items.map((c, i) => (
          <li key={i}>{c.to ? <a href={c.to}>{c.label}</a> : <span aria-current="page">{c.label}</span>}</li>
        ))}
      </ol>
    </nav>
  );
}
