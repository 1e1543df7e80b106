import { routes, type ImageRow, type ImagesView } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { HealthBadge, OsId, Refs, When } from '../parts/bits.tsx';
import { Crumbs } from '../parts/layout.tsx';
import { Freshness, Show } from '../parts/state.tsx';
import { href } from '../router.ts';

// Images: each followed repository and tag, its history of digests → Glance image ids (the
// active one marked, the previous ones kept), who uses it, the signature result.

function short(d: string | undefined): string {
  return d ? d.replace(/^(sha256:[0-9a-f]{12})[0-9a-f]+$/, '$1…') : '—';
}

function Image(props: { i: ImageRow }) {
  const { i } = props;
  return (
    <section class="image" aria-labelledby={`img-${i.namespace}-${i.name}`} data-image={`${i.namespace}/${i.name}`}>
      <h2 id={`img-${i.namespace}-${i.name}`}>
        <a href={href.object(i.namespace, 'Image', i.name)}>{i.name}</a> <span class="muted">in {i.namespace}</span> <HealthBadge health={i.health} />
      </h2>
      <dl class="facts">
        <dt>Follows</dt>
        <dd>
          <code>{i.source}</code>
          {i.resolvedTag && i.resolvedTag !== i.tag && <span> → tag {i.resolvedTag}</span>}
        </dd>
        <dt>Active Glance image</dt>
        <dd>
          <OsId id={i.openstackId} />
        </dd>
        <dt>Signature</dt>
        <dd>{i.signature ?? <span class="muted">not reported</span>}</dd>
        <dt>Used by</dt>
        <dd>
          <Refs refs={i.usedBy} from={i.namespace} />
        </dd>
        {i.transfer && (
          <>
            <dt>Transfer</dt>
            <dd>
              {short(i.transfer.digest)}{' '}
              {i.transfer.bytesTotal ? (
                <progress max={i.transfer.bytesTotal} value={i.transfer.bytesDone ?? 0}>
                  {Math.round(((i.transfer.bytesDone ?? 0) * 100) / i.transfer.bytesTotal)} %
                </progress>
              ) : (
                `${i.transfer.bytesDone ?? 0} bytes`
              )}
            </dd>
          </>
        )}
      </dl>
      <table class="versions">
        <caption>Versions of {i.name}, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Digest</th>
            <th scope="col">Tag</th>
            <th scope="col">Glance image id</th>
            <th scope="col">Created</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {i.versions.map((v, n) => (
            <tr key={v.digest ?? v.glanceId ?? n} class={v.active ? 'active' : undefined} data-digest={v.digest}>
              <td>
                <code title={v.digest}>{short(v.digest)}</code>
              </td>
              <td>{v.tag ?? ''}</td>
              <td>
                <OsId id={v.glanceId} />
              </td>
              <td>
                <When at={v.createdAt} />
              </td>
              <td>
                {v.active ? <strong class="health h-ready">active</strong> : 'kept'}
                {v.inUse && !v.active ? ' · in use' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Body(props: { v: ImagesView; ns: string | undefined; at: Date | undefined }) {
  return (
    <>
      <Crumbs
        items={[{ label: 'Syncs', to: href.overview() }, ...(props.ns ? [{ label: props.ns, to: href.namespace(props.ns) }] : []), { label: 'images' }]}
      />
      <h1 tabIndex={-1}>Images{props.ns ? ` in ${props.ns}` : ''}</h1>
      <Freshness at={props.at} />
      {props.v.forbidden.length > 0 && <p class="note">Not readable by you: {props.v.forbidden.join(', ')}.</p>}
      {props.v.images.length === 0 && <p class="muted">No Image to show.</p>}
      {props.v.images.map((i) => (
        <Image key={`${i.namespace}/${i.name}`} i={i} />
      ))}
    </>
  );
}

export function ImagesPage(props: { namespace: string | undefined }) {
  const loaded = useApi<ImagesView>(routes.images(props.namespace), 'images');
  return <Show loaded={loaded}>{(v) => <Body v={v} ns={props.namespace} at={loaded.state === 'ok' ? loaded.at : undefined} />}</Show>;
}
