import { routes, type Revision, type SyncSummary, type SyncTree } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { Diagnostics, Events, HealthBadge, shortRevision, When } from '../parts/bits.tsx';
import { Crumbs } from '../parts/layout.tsx';
import { ObjectHead, ObjectRow } from '../parts/object-rows.tsx';
import { Paged } from '../parts/paged.tsx';
import { Freshness, Show } from '../parts/state.tsx';
import { href, syncScope } from '../router.ts';

// A Sync's tree: its revision → the namespaces it applies to → their objects (OpenStack ids,
// health, drift, references as links), then its runs and Events. Live: a pushed revision's new
// objects appear here as their status changes, without a reload.

function Runs(props: { history: SyncTree['history'] }) {
  if (props.history.length === 0) return <p class="muted">No run recorded.</p>;
  return (
    <table>
      <caption class="vh">Runs</caption>
      <thead>
        <tr>
          <th scope="col">Started</th>
          <th scope="col">Revision</th>
          <th scope="col">Result</th>
          <th scope="col">Took</th>
          <th scope="col">Counts</th>
        </tr>
      </thead>
      <tbody>
        {props.history.map((h, i) => (
          <tr key={i}>
            <td>
              <When at={h.startedAt} />
            </td>
            <td>
              <code title={h.revision}>{shortRevision(h.revision)}</code>
            </td>
            <td>
              {h.result}
              {h.message && <div class="msg">{h.message}</div>}
            </td>
            <td>{h.duration ?? ''}</td>
            <td>
              {Object.entries(h.counts ?? {})
                .map(([k, c]) => `${c} ${k}`)
                .join(', ')}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Facts(props: { s: SyncSummary; rev: Revision | undefined }) {
  const { s, rev } = props;
  return (
    <dl class="facts">
      <dt>Source</dt>
      <dd>
        <code>{s.source}</code> {s.path && <span class="muted">path {s.path}</span>}
      </dd>
      <dt>Applied revision</dt>
      <dd>
        {rev ? (
          <>
            <code title={rev.revision}>{shortRevision(rev.revision)}</code> {rev.message && <q>{rev.message}</q>}{' '}
            <span class="muted">
              {rev.author ?? ''} <When at={rev.when} />
            </span>
          </>
        ) : (
          'none yet'
        )}
      </dd>
      {s.message && (
        <>
          <dt>Status</dt>
          <dd>
            {s.reason ? `${s.reason}: ` : ''}
            {s.message}
          </dd>
        </>
      )}
      {(s.held || s.rejected) && (
        <>
          <dt>Waiting</dt>
          <dd>
            <a href={href.plan(s.name, s.namespace)}>
              {s.held ? `Held revision ${shortRevision(s.held)}` : `Rejected revision ${shortRevision(s.rejected)}`}: its plan
            </a>
          </dd>
        </>
      )}
      {s.wait && (
        <>
          <dt>Wait</dt>
          <dd>
            {s.wait.ready} ready · {s.wait.reconciling} reconciling · {s.wait.stalled} stalled
            {s.wait.failing.length > 0 && <span class="muted"> (first not ready: {s.wait.failing.join(', ')})</span>}
          </dd>
        </>
      )}
    </dl>
  );
}

function Tree(props: { t: SyncTree; at: Date | undefined }) {
  const { t } = props;
  const s = t.sync;
  const rev = t.revision ?? s.applied;
  return (
    <>
      <Crumbs items={[{ label: 'Syncs', to: href.overview() }, { label: s.namespace ? `${s.namespace}/${s.name}` : s.name }]} />
      <h1 tabIndex={-1}>
        {s.namespace ? `NamespaceSync ${s.namespace}/${s.name}` : `Sync ${s.name}`} <HealthBadge health={s.health} />
      </h1>
      <Freshness at={props.at} />
      <Facts s={s} rev={rev} />
      <Diagnostics diagnostics={s.diagnostics} />
      <h2>Objects</h2>
      {t.cluster.length > 0 && (
        <details open>
          <summary>Cluster-scoped ({t.cluster.length})</summary>
          <table>
            <caption class="vh">Cluster-scoped objects</caption>
            <thead>
              <ObjectHead withKind />
            </thead>
            <tbody>
              {t.cluster.map((o) => (
                <ObjectRow key={`${o.kind}/${o.name}`} o={o} ns="" withKind />
              ))}
            </tbody>
          </table>
        </details>
      )}
      {t.namespaces.map((n) => (
        <details key={n.name} open class="ns">
          <summary>
            Namespace <a href={href.namespace(n.name)}>{n.name}</a> (
            {n.forbidden ? 'not readable by you' : `${n.objects.length} object${n.objects.length === 1 ? '' : 's'}`})
          </summary>
          {!n.forbidden && (
            <Paged
              rows={n.objects}
              label={`objects of ${n.name}`}
              text={(o) => `${o.kind} ${o.name} ${o.openstackId ?? ''}`}
              head={<ObjectHead withKind />}
              row={(o) => <ObjectRow key={`${o.kind}/${o.name}`} o={o} ns={n.name} withKind />}
            />
          )}
          {!n.forbidden && n.events && n.events.length > 0 && (
            <>
              <h3>Last Events in {n.name}</h3>
              <Events events={n.events} label={`Last Events in ${n.name}`} withObject />
            </>
          )}
        </details>
      ))}
      <h2>Runs</h2>
      <Runs history={t.history} />
      <h2>Events</h2>
      <Events events={t.events} label={s.namespace ? `Events of NamespaceSync ${s.namespace}/${s.name}` : `Events of Sync ${s.name}`} />
    </>
  );
}

export function SyncPage(props: { name: string; namespace?: string | undefined }) {
  const loaded = useApi<SyncTree>(routes.sync(props.name, props.namespace), syncScope(props.name, props.namespace));
  return <Show loaded={loaded}>{(t) => <Tree t={t} at={loaded.state === 'ok' ? loaded.at : undefined} />}</Show>;
}
