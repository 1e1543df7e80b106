import { routes, type CloudView, type UpgradeStep } from '../../../agent/view/api.ts';
import { useApi } from '../client.ts';
import { Conditions, Events, HealthBadge, When } from '../parts/bits.tsx';
import { Crumbs } from '../parts/layout.tsx';
import { Freshness, Show } from '../parts/state.tsx';
import { href } from '../router.ts';

// The cloud (OpenStackCloud): its services and releases, and an upgrade's progress step by step
// (backup, chart, Job, gate) with times, live while it runs.

const marks: Record<UpgradeStep['state'], string> = { Done: '✓', Running: '…', Failed: '✗', Waiting: '○' };

function Steps(props: { steps: UpgradeStep[] }) {
  return (
    <ol class="steps">
      {props.steps.map((s, i) => (
        <li key={`${s.step}/${i}`} class={`step s-${s.state.toLowerCase()}`} aria-current={s.state === 'Running' ? 'step' : undefined} data-step={s.step}>
          <span class="mark" aria-hidden="true">
            {marks[s.state]}
          </span>
          <strong>{s.step}</strong> <span class="state">{s.state}</span>{' '}
          <span class="muted">
            {s.startedAt && (
              <>
                started <When at={s.startedAt} />
              </>
            )}
            {s.finishedAt && (
              <>
                {' '}
                · finished <When at={s.finishedAt} />
              </>
            )}
          </span>
          {s.message && <div class="msg">{s.message}</div>}
        </li>
      ))}
    </ol>
  );
}

function Body(props: { c: CloudView; at: Date | undefined }) {
  const { c } = props;
  return (
    <>
      <Crumbs items={[{ label: 'Syncs', to: href.overview() }, { label: `cloud ${c.name}` }]} />
      <h1 tabIndex={-1}>
        Cloud {c.name} <HealthBadge health={c.health} />
      </h1>
      <Freshness at={props.at} />
      <dl class="facts">
        <dt>Release</dt>
        <dd>{c.release ?? '—'}</dd>
        {c.nextWindow && (
          <>
            <dt>Next window</dt>
            <dd>{c.nextWindow}</dd>
          </>
        )}
        {c.lastBackup && (
          <>
            <dt>Last backup</dt>
            <dd>
              <When at={c.lastBackup.time} /> {c.lastBackup.result ?? ''} {c.lastBackup.location && <code>{c.lastBackup.location}</code>}
            </dd>
          </>
        )}
      </dl>
      {c.upgrade && (
        <section aria-labelledby="upgrade-h" class="upgrade">
          <h2 id="upgrade-h">
            Upgrade {c.upgrade.from ?? '?'} → {c.upgrade.to ?? '?'} <span class="tag">{c.upgrade.phase ?? ''}</span>
          </h2>
          <p class="muted">
            {c.upgrade.startedAt && (
              <>
                Started <When at={c.upgrade.startedAt} />
              </>
            )}
            {c.upgrade.backup && <> · backup {c.upgrade.backup}</>}
          </p>
          <Steps steps={c.upgrade.steps} />
        </section>
      )}
      {c.failure && (
        <section class="error" aria-labelledby="failure-h">
          <h2 id="failure-h">Failed at {c.failure.step ?? 'a step'}</h2>
          <p>
            {c.failure.kind ? `${c.failure.kind}/${c.failure.name ?? ''}: ` : ''}
            {c.failure.reason ?? ''}
          </p>
          {c.failure.logTail && <pre tabIndex={0}>{c.failure.logTail}</pre>}
        </section>
      )}
      <h2>Services</h2>
      <table>
        <caption class="vh">Services</caption>
        <thead>
          <tr>
            <th scope="col">Service</th>
            <th scope="col">Ready</th>
            <th scope="col">Release</th>
            <th scope="col">Chart</th>
            <th scope="col">Endpoint</th>
          </tr>
        </thead>
        <tbody>
          {c.services.map((s) => (
            <tr key={s.name}>
              <th scope="row">{s.name}</th>
              <td>
                <HealthBadge health={s.ready ? 'Ready' : 'Reconciling'} />
                {s.message && <div class="msg">{s.message}</div>}
              </td>
              <td>{s.release ?? ''}</td>
              <td>{s.chartVersion ?? ''}</td>
              <td>{s.endpoint ? <code>{s.endpoint}</code> : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Conditions</h2>
      <Conditions conditions={c.conditions} />
      <h2>Events</h2>
      <Events events={c.events} label={`Events of cloud ${c.name}`} />
    </>
  );
}

export function CloudPage(props: { name: string }) {
  const loaded = useApi<CloudView>(routes.cloud(props.name), `cloud:${props.name}`);
  return <Show loaded={loaded}>{(c) => <Body c={c} at={loaded.state === 'ok' ? loaded.at : undefined} />}</Show>;
}
