import type { ObjectSummary } from '../../../agent/view/api.ts';
import { href } from '../router.ts';
import { HealthBadge, OsId, Refs, When } from './bits.tsx';

// The object row of the Sync tree and the namespace page: name (a link to its page), OpenStack
// id, health with why, drift, references as links, the last Event.

export function ObjectHead(props: { withKind: boolean }) {
  return (
    <tr>
      {props.withKind && <th scope="col">Kind</th>}
      <th scope="col">Name</th>
      <th scope="col">OpenStack id</th>
      <th scope="col">Health</th>
      <th scope="col">Drift</th>
      <th scope="col">References</th>
      <th scope="col">Last Event</th>
    </tr>
  );
}

export function ObjectRow(props: { o: ObjectSummary; ns: string; withKind: boolean }) {
  const o = props.o;
  const ns = o.namespace ?? props.ns;
  return (
    <tr key={`${o.kind}/${o.name}`} data-object={`${o.kind}/${o.name}`}>
      {props.withKind && <td>{o.kind}</td>}
      <th scope="row">{ns ? <a href={href.object(ns, o.kind, o.name)}>{o.name}</a> : o.name}</th>
      <td>
        <OsId id={o.openstackId} />
      </td>
      <td>
        <HealthBadge health={o.health} />
        {o.health !== 'Ready' && (o.reason || o.message) && (
          <div class="msg">
            {o.reason ? `${o.reason}: ` : ''}
            {o.message ?? ''}
          </div>
        )}
      </td>
      <td>{o.drift ? <span class="drift">{o.drift}</span> : <span class="muted">none</span>}</td>
      <td>
        <Refs refs={o.refs} from={ns} />
      </td>
      <td>
        {o.lastEvent ? (
          <span class={o.lastEvent.type === 'Warning' ? 'warn' : undefined}>
            {o.lastEvent.reason} <When at={o.lastEvent.at} />
          </span>
        ) : (
          <When at={o.lastSyncTime} />
        )}
      </td>
    </tr>
  );
}
