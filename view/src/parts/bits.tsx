import type { Condition, Diagnostic, Health, ObjectEvent, ObjectRef } from '../../../agent/view/api.ts';
import { href } from '../router.ts';

// Small pieces every page uses: a health word (colour AND text, never colour alone), times,
// links for references, conditions, Events and diagnostics.

export function HealthBadge(props: { health: Health }) {
  return <span class={`health h-${props.health.toLowerCase()}`}>{props.health}</span>;
}

/** A time as "3 min ago", the exact ISO time in its tooltip and datetime attribute. */
export function When(props: { at: string | undefined }) {
  if (!props.at) return <span class="muted">—</span>;
  const d = new Date(props.at);
  if (Number.isNaN(d.getTime())) return <span>{props.at}</span>;
  return (
    <time dateTime={d.toISOString()} title={d.toLocaleString()}>
      {ago(d)}
    </time>
  );
}

function ago(d: Date): string {
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (s < 0) return d.toLocaleString();
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return d.toLocaleDateString();
}

/** An OpenStack id, in monospace, whole (selectable: people paste it into `openstack … show`). */
export function OsId(props: { id: string | undefined }) {
  return props.id ? <code class="osid">{props.id}</code> : <span class="muted">not created</span>;
}

export function RefLink(props: { r: ObjectRef; from?: string }) {
  const ns = props.r.namespace ?? props.from;
  const label = `${props.r.kind}/${props.r.name}`;
  return ns ? <a href={href.object(ns, props.r.kind, props.r.name)}>{label}</a> : <span>{label}</span>;
}

export function Refs(props: { refs: ObjectRef[]; from?: string }) {
  if (props.refs.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="inline">
      {props.refs.map((r) => (
        <li key={`${r.kind}/${r.namespace ?? ''}/${r.name}/${r.field ?? ''}`}>
          {r.field && <span class="muted">{r.field} → </span>}
          <RefLink r={r} {...(props.from ? { from: props.from } : {})} />
        </li>
      ))}
    </ul>
  );
}

export function Conditions(props: { conditions: Condition[] }) {
  if (props.conditions.length === 0) return <p class="muted">No conditions yet.</p>;
  return (
    <table>
      <caption class="vh">Conditions</caption>
      <thead>
        <tr>
          <th scope="col">Type</th>
          <th scope="col">Status</th>
          <th scope="col">Reason</th>
          <th scope="col">Message</th>
          <th scope="col">Since</th>
        </tr>
      </thead>
      <tbody>
        {props.conditions.map((c) => (
          <tr key={c.type}>
            <th scope="row">{c.type}</th>
            <td>{c.status}</td>
            <td>{c.reason ?? ''}</td>
            <td class="msg">{c.message ?? ''}</td>
            <td>
              <When at={c.lastTransitionTime} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Events(props: { events: ObjectEvent[]; label?: string; withObject?: boolean }) {
  if (props.events.length === 0) return <p class="muted">No Events.</p>;
  return (
    <table class="events">
      <caption class="vh">{props.label ?? 'Events'}</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Type</th>
          <th scope="col">Reason</th>
          {props.withObject && <th scope="col">Object</th>}
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {props.events.map((e, i) => (
          <tr key={`${e.at}/${e.reason}/${i}`} class={e.type === 'Warning' ? 'warn' : undefined}>
            <td>
              <When at={e.at} />
            </td>
            <td>{e.type}</td>
            <td class="reason">
              {e.reason}
              {e.count > 1 ? ` ×${e.count}` : ''}
            </td>
            {props.withObject && <td>{e.object ?? ''}</td>}
            <td class="msg">{e.message}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Diagnostics(props: { diagnostics: Diagnostic[] }) {
  if (props.diagnostics.length === 0) return null;
  return (
    <ul class="diagnostics">
      {props.diagnostics.map((d, i) => (
        <li key={i}>
          {d.file ? (
            <>
              <code>
                {d.file}
                {d.line !== undefined ? `:${d.line}` : ''}
                {d.column !== undefined ? `:${d.column}` : ''}
              </code>{' '}
              {d.message}
            </>
          ) : (
            d.text
          )}
        </li>
      ))}
    </ul>
  );
}

export function shortRevision(rev: string | undefined): string {
  if (!rev) return '—';
  const m = /^(.*?)(sha1|sha256):([0-9a-f]+)$/.exec(rev);
  return m ? `${m[1]}${m[2]}:${m[3]!.slice(0, 10)}` : rev;
}
