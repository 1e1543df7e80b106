import { routes, type HeldPlan } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { Diagnostics, RefLink, shortRevision } from '../parts/bits.tsx';
import { Crumbs } from '../parts/layout.tsx';
import { Show } from '../parts/state.tsx';
import { href, syncScope } from '../router.ts';

// A held (mass delete) or rejected (validation) revision: why it waits, what it would delete,
// the diagnostics, and how to go on — the data `kupenstack plan` prints.

function Body(props: { p: HeldPlan; namespace?: string | undefined }) {
  const { p } = props;
  return (
    <>
      <Crumbs items={[{ label: 'Syncs', to: href.overview() }, { label: p.sync, to: href.sync(p.sync, props.namespace) }, { label: 'plan' }]} />
      <h1 tabIndex={-1}>
        {p.why === 'mass-delete' ? 'Held' : 'Rejected'} revision <code>{shortRevision(p.revision)}</code>
      </h1>
      <p class={p.why === 'mass-delete' ? 'note' : 'error'}>{p.message}</p>
      {p.counts && (
        <p>
          {Object.entries(p.counts)
            .map(([k, c]) => `${c} to ${k}`)
            .join(' · ')}
        </p>
      )}
      {p.deletions.length > 0 && (
        <>
          <h2>Would delete ({p.deletions.length})</h2>
          <ul class="plan-deletions">
            {p.deletions.map((r) => (
              <li key={`${r.kind}/${r.namespace ?? ''}/${r.name}`}>
                <span class="del" aria-hidden="true">
                  −
                </span>{' '}
                <RefLink r={r} /> {r.namespace && <span class="muted">in {r.namespace}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
      {p.diagnostics.length > 0 && (
        <>
          <h2>Diagnostics</h2>
          <Diagnostics diagnostics={p.diagnostics} />
        </>
      )}
      {p.confirm && (
        <>
          <h2>To go on</h2>
          <pre>
            <code>{p.confirm}</code>
          </pre>
          <p class="muted">This view is read-only: run it where you have the right to.</p>
        </>
      )}
    </>
  );
}

export function PlanPage(props: { name: string; namespace?: string | undefined }) {
  const loaded = useApi<HeldPlan>(routes.syncPlan(props.name, props.namespace), syncScope(props.name, props.namespace));
  return <Show loaded={loaded}>{(p) => <Body p={p} namespace={props.namespace} />}</Show>;
}
