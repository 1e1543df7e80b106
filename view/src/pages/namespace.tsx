import { routes, type NamespaceView } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { Events, HealthBadge } from '../parts/bits.tsx';
import { Crumbs } from '../parts/layout.tsx';
import { ObjectHead, ObjectRow } from '../parts/object-rows.tsx';
import { Paged } from '../parts/paged.tsx';
import { Freshness, Show } from '../parts/state.tsx';
import { href } from '../router.ts';

// A namespace (= an OpenStack project): what is held or Stalled and why first, its quotas, then
// its objects by kind, each kind a page of 100 rows at a time (fast with 1 000 objects).

function show(v: unknown): string {
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
}

function Quotas(props: { q: NamespaceView['quotas'] }) {
  if (props.q.length === 0) return <p class="muted">No ProjectQuota in this namespace.</p>;
  return (
    <>
      {props.q.map((q) => (
        <table key={q.name}>
          <caption>
            ProjectQuota {q.name} <HealthBadge health={q.health} />
          </caption>
          <thead>
            <tr>
              <th scope="col">Resource</th>
              <th scope="col">Limit</th>
              <th scope="col">In use</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(q.limits).map(([k, v]) => (
              <tr key={k}>
                <th scope="row">{k}</th>
                <td>{show(v)}</td>
                <td>{q.usage && k in q.usage ? show(q.usage[k]) : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
    </>
  );
}

function Body(props: { n: NamespaceView; at: Date | undefined }) {
  const { n } = props;
  const kinds = Object.keys(n.kinds).sort();
  const total = kinds.reduce((a, k) => a + (n.kinds[k]?.length ?? 0), 0);
  return (
    <>
      <Crumbs items={[{ label: 'Syncs', to: href.overview() }, { label: `namespace ${n.name}` }]} />
      <h1 tabIndex={-1}>Namespace {n.name}</h1>
      <Freshness at={props.at} />
      <p>
        {total} objects in {kinds.length} kinds · <a href={href.images(n.name)}>its images</a>
      </p>
      {n.paused && (
        <p class="note" role="note">
          Paused (plan only): {n.paused}
        </p>
      )}
      {n.held.length > 0 && (
        <section aria-labelledby="held-h">
          <h2 id="held-h">Held or Stalled ({n.held.length})</h2>
          <ul class="held">
            {n.held.map((h) => (
              <li key={`${h.kind}/${h.name}`}>
                <a href={href.object(n.name, h.kind, h.name)}>
                  {h.kind}/{h.name}
                </a>{' '}
                <strong>{h.reason}</strong>: {h.message}
              </li>
            ))}
          </ul>
        </section>
      )}
      <h2>Quotas</h2>
      <Quotas q={n.quotas} />
      <nav aria-label="Kinds" class="kinds">
        <ul>
          {kinds.map((k) => (
            <li key={k}>
              <a href={`#kind-${k}`}>
                {k} ({n.kinds[k]?.length ?? 0})
              </a>
            </li>
          ))}
        </ul>
      </nav>
      {kinds.map((k) => (
        <section key={k} id={`kind-${k}`} aria-labelledby={`kind-h-${k}`}>
          <h2 id={`kind-h-${k}`}>{k}</h2>
          <Paged
            rows={n.kinds[k] ?? []}
            label={`${k} objects`}
            text={(o) => `${o.name} ${o.openstackId ?? ''} ${o.health}`}
            head={<ObjectHead withKind={false} />}
            row={(o) => <ObjectRow key={o.name} o={o} ns={n.name} withKind={false} />}
          />
        </section>
      ))}
      <h2>Events</h2>
      <Events events={n.events} label={`Events in ${n.name}`} withObject />
    </>
  );
}

export function NamespacePage(props: { namespace: string }) {
  const loaded = useApi<NamespaceView>(routes.namespace(props.namespace), `namespace:${props.namespace}`);
  return <Show loaded={loaded}>{(n) => <Body n={n} at={loaded.state === 'ok' ? loaded.at : undefined} />}</Show>;
}
