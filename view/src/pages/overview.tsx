import { routes, type Overview as OverviewData, type SyncSummary } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { Diagnostics, HealthBadge, shortRevision, When } from '../parts/bits.tsx';
import { Freshness, Show } from '../parts/state.tsx';
import { href } from '../router.ts';

// The first page: every Sync the person may read (source, applied revision, health, `wait`
// counts, diagnostics), the namespaces (projects) and clouds; live from the server's watches.

function SyncRow(props: { s: SyncSummary }) {
  const s = props.s;
  return (
    <tr>
      <th scope="row">
        <a href={href.sync(s.name, s.namespace)}>{s.namespace ? `${s.namespace}/${s.name}` : s.name}</a>
        {s.suspended && <span class="tag">suspended</span>}
      </th>
      <td class="src">
        <code>{s.source}</code>
        {s.path && <span class="muted"> {s.path}</span>}
      </td>
      <td>
        {s.applied ? (
          <div class="rev">
            <code title={s.applied.revision}>{shortRevision(s.applied.revision)}</code>
            {s.applied.message && <div class="msg">{s.applied.message}</div>}
            <div class="muted">
              {s.applied.author ?? ''} <When at={s.applied.when} />
            </div>
          </div>
        ) : (
          <span class="muted">nothing applied yet</span>
        )}
      </td>
      <td>
        <HealthBadge health={s.health} />
        {s.message && <div class="msg">{s.message}</div>}
        {s.held && (
          <div>
            <a href={href.plan(s.name, s.namespace)}>Held revision {shortRevision(s.held)}: see its plan</a>
          </div>
        )}
        {s.rejected && (
          <div>
            <a href={href.plan(s.name, s.namespace)}>Rejected revision {shortRevision(s.rejected)}</a>
          </div>
        )}
        <Diagnostics diagnostics={s.diagnostics} />
      </td>
      <td>
        {s.wait ? (
          <span>
            {s.wait.ready} ready · {s.wait.reconciling} reconciling · {s.wait.stalled} stalled
          </span>
        ) : (
          <span class="muted">{s.objects} objects</span>
        )}
      </td>
      <td>
        <When at={s.lastSyncTime} />
      </td>
    </tr>
  );
}

function Body(props: { d: OverviewData; at: Date | undefined }) {
  const { d } = props;
  return (
    <>
      <h1 tabIndex={-1}>Syncs</h1>
      <Freshness at={props.at} />
      {d.forbidden.length > 0 && <p class="note">Your identity may not list: {d.forbidden.join(', ')}. Only what it may read is shown.</p>}
      {d.syncs.length > 0 ? (
        <table class="syncs">
          <caption class="vh">Syncs</caption>
          <thead>
            <tr>
              <th scope="col">Sync</th>
              <th scope="col">Source</th>
              <th scope="col">Applied revision</th>
              <th scope="col">Health</th>
              <th scope="col">Objects</th>
              <th scope="col">Last sync</th>
            </tr>
          </thead>
          <tbody>
            {d.syncs.map((s) => (
              <SyncRow key={s.name} s={s} />
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No Sync to show.</p>
      )}
      <h2>Namespaces</h2>
      {d.namespaces.length > 0 ? (
        <ul class="cards">
          {d.namespaces.map((n) => (
            <li key={n.name}>
              <a href={href.namespace(n.name)}>{n.name}</a>
              <span>
                {n.ready} ready · {n.notReady} not ready · {n.stalled} stalled
              </span>
              <span class="muted">
                {Object.entries(n.counts)
                  .map(([k, c]) => `${c} ${k}`)
                  .join(', ')}
              </span>
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">No namespace with KupenStack objects that you may read.</p>
      )}
      {d.clouds.length > 0 && (
        <>
          <h2>Clouds</h2>
          <ul class="cards">
            {d.clouds.map((c) => (
              <li key={c.name}>
                <a href={href.cloud(c.name)}>{c.name}</a> <HealthBadge health={c.health} />
                <span>{c.release ? `release ${c.release}` : ''}</span>
                {c.upgrading && <span class="tag">upgrading to {c.upgrading}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}

export function Overview() {
  const loaded = useApi<OverviewData>(routes.overview, 'overview');
  return <Show loaded={loaded}>{(d) => <Body d={d} at={loaded.state === 'ok' ? loaded.at : undefined} />}</Show>;
}
