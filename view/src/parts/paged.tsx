import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';

// A long list shown a page at a time with a filter: 1 000 objects in a namespace render as the
// first 100 rows (the DOM stays small, the first content comes fast); the rest one click away.

export const pageSize = 100;

export function Paged<T>(props: { rows: T[]; label: string; text: (row: T) => string; head: ComponentChildren; row: (row: T) => ComponentChildren }) {
  const [filter, setFilter] = useState('');
  const [page, setPage] = useState(0);
  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return f ? props.rows.filter((r) => props.text(r).toLowerCase().includes(f)) : props.rows;
  }, [props.rows, filter]);
  const pages = Math.max(1, Math.ceil(shown.length / pageSize));
  const at = Math.min(page, pages - 1);
  const slice = shown.slice(at * pageSize, (at + 1) * pageSize);
  const id = props.label.replace(/\W+/g, '-').toLowerCase();
  return (
    <div class="paged">
      {props.rows.length > 10 && (
        <div class="filter">
          <label for={`f-${id}`}>Filter {props.label}</label>
          <input
            id={`f-${id}`}
            type="search"
            value={filter}
            onInput={(e) => {
              setFilter(e.currentTarget.value);
              setPage(0);
            }}
          />
        </div>
      )}
      <table>
        <caption class="vh">{props.label}</caption>
        <thead>{props.head}</thead>
        <tbody>{slice.map((r) => props.row(r))}</tbody>
      </table>
      {pages > 1 && (
        <nav class="pager" aria-label={`Pages of ${props.label}`}>
          <button type="button" disabled={at === 0} onClick={() => setPage(at - 1)}>
            Previous
          </button>
          <span aria-live="polite">
            Rows {at * pageSize + 1}–{at * pageSize + slice.length} of {shown.length}
          </span>
          <button type="button" disabled={at >= pages - 1} onClick={() => setPage(at + 1)}>
            Next
          </button>
        </nav>
      )}
    </div>
  );
}
