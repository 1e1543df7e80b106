import { routes, type ObjectDetail } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { Conditions, Events, HealthBadge, OsId, Refs, When } from '../parts/bits.tsx';
import { Crumbs } from '../parts/layout.tsx';
import { Freshness, Show } from '../parts/state.tsx';
import { href } from '../router.ts';

// One object: its OpenStack id, health and conditions, its Events (Created, Recreated,
// DriftCorrected …), what it references and what references it, spec and status as applied.

function Body(props: { o: ObjectDetail; ns: string; at: Date | undefined }) {
  const { o, ns } = props;
  return (
    <>
      <Crumbs
        items={[
          { label: 'Syncs', to: href.overview() },
          ...(o.sync ? [{ label: o.sync, to: href.sync(o.sync) }] : []),
          { label: ns, to: href.namespace(ns) },
          { label: `${o.kind}/${o.name}` },
        ]}
      />
      <h1 tabIndex={-1}>
        {o.kind} {o.name} <HealthBadge health={o.health} />
      </h1>
      <Freshness at={props.at} />
      <dl class="facts">
        <dt>OpenStack id</dt>
        <dd>
          <OsId id={o.openstackId} />
        </dd>
        {o.message && (
          <>
            <dt>Why</dt>
            <dd>
              {o.reason ? `${o.reason}: ` : ''}
              {o.message}
            </dd>
          </>
        )}
        <dt>Drift</dt>
        <dd>{o.drift ?? 'none seen'}</dd>
        <dt>Last synced</dt>
        <dd>
          <When at={o.lastSyncTime} />
        </dd>
        <dt>References</dt>
        <dd>
          <Refs refs={o.refs} from={ns} />
        </dd>
        <dt>Referenced by</dt>
        <dd>
          <Refs refs={o.referencedBy} from={ns} />
        </dd>
      </dl>
      <h2>Conditions</h2>
      <Conditions conditions={o.conditions} />
      <h2>Events</h2>
      <Events events={o.events} label={`Events of ${o.kind} ${o.name}`} />
      <h2>Spec</h2>
      <pre class="yaml" tabIndex={0} aria-label="Spec as applied">
        {JSON.stringify(o.spec, null, 2)}
      </pre>
      <h2>Status</h2>
      <pre class="yaml" tabIndex={0} aria-label="Status">
        {JSON.stringify(o.status, null, 2)}
      </pre>
    </>
  );
}

export function ObjectPage(props: { namespace: string; kind: string; name: string }) {
  const loaded = useApi<ObjectDetail>(routes.object(props.namespace, props.kind, props.name), `namespace:${props.namespace}`);
  return <Show loaded={loaded}>{(o) => <Body o={o} ns={props.namespace} at={loaded.state === 'ok' ? loaded.at : undefined} />}</Show>;
}
