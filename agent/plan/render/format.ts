/**
 * Helpers shared by the plan renderers. Renderers only format a `Plan`
 * (STYLE.md §4): nothing here decides what changes, only how it reads.
 */
import type { CloudObjectChange } from '../../cloud/diff.ts';
import type { CloudPlan } from '../../cloud/plan.ts';
import type { Action, Change, FieldDiff, PlanSummary } from '../plan.ts';

/** The actions a renderer shows: `noop` is planner bookkeeping, not a change. */
export type ShownAction = Exclude<Action, 'noop'>;

export function shownChanges(changes: readonly Change[]): Change[] {
  return changes.filter((c) => c.action !== 'noop');
}

/** Terraform's symbols; a heal is an in-place action on an existing object, so it reads as `~`. */
export const actionSymbol: Record<ShownAction, string> = { create: '+', update: '~', replace: '-/+', delete: '-', heal: '~', adopt: '<=' };

const healVerb = { reboot: 'by a reboot', rebuild: 'by a rebuild', recreate: 'by recreating it' } as const;

/** What happens to the object, after its address: "will be created", "must be replaced". */
export function actionVerb(change: Change): string {
  switch (change.action) {
    case 'create':
      return change.sharing === 'share'
        ? 'will be shared with the project (one Glance image per digest; imported only if the cloud lacks it)'
        : 'will be created';
    case 'update':
      return 'will be updated in place';
    case 'replace':
      return 'must be replaced';
    case 'delete':
      return change.sharing === 'unshare' ? 'will be unshared from the project (the image is deleted when no project uses it)' : 'will be deleted';
    case 'adopt':
      return 'will be adopted (only its ownership marker is written)';
    case 'heal':
      return change.heal ? `will be healed ${healVerb[change.heal.step]}` : 'will be healed';
    case 'noop':
      return 'is unchanged';
  }
}

/** The label of a change's group: cluster-scoped kinds have no namespace. */
const clusterGroup = '(cluster-scoped)';

function groupOf(change: Change): string {
  return change.namespace === '' ? clusterGroup : change.namespace;
}

/** Changes by namespace, cluster-scoped first then by name; the planner's order (the execution order) is kept inside a group. */
export function byNamespace(changes: readonly Change[]): [string, Change[]][] {
  const groups = new Map<string, Change[]>();
  for (const c of changes) {
    const g = groupOf(c);
    const list = groups.get(g);
    if (list) list.push(c);
    else groups.set(g, [c]);
  }
  const rank = (g: string): string => (g === clusterGroup ? '' : `~${g}`);
  return [...groups.entries()].sort(([a], [b]) => compare(rank(a), rank(b)));
}

/** Code-unit order: stable across locales, unlike localeCompare. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Control characters, and the bidirectional overrides of "Trojan Source", are
 * shown as escapes: a name or message must not move the terminal's cursor,
 * colour it, or reorder what the reviewer reads.
 */
export function sanitize(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (ch) => `\\u{${ch.codePointAt(0)!.toString(16)}}`);
}

/** Cuts to at most `max` characters (code points), marking the cut with an ellipsis. */
function truncate(s: string, max: number): string {
  const points = Array.from(s);
  return points.length <= max ? s : `${points.slice(0, Math.max(0, max - 1)).join('')}…`;
}

/** A value as compact JSON, cut with an ellipsis past `max` characters; `undefined` (absent) reads as `(none)`. */
export function formatValue(value: unknown, max = 72): string {
  if (value === undefined) return '(none)';
  let json: string;
  try {
    // Undefined for a function or a symbol: not JSON, so not a value a planner diffs.
    json = JSON.stringify(value) ?? '(none)';
  } catch {
    // Cycles and bigints cannot come from a planner that diffs JSON, but a renderer must not throw.
    json = typeof value === 'bigint' ? value.toString() : '(unprintable)';
  }
  return truncate(sanitize(json), max);
}

/**
 * One field of a change as the symbol and the text after it. The symbol says
 * what happens to the field: `+` set, `-` removed, `~` changed.
 */
export function fieldLine(action: ShownAction, f: FieldDiff, max = 72): { symbol: string; text: string; forces: boolean } {
  const path = sanitize(f.path);
  if (action === 'create' || (f.before === undefined && f.after !== undefined))
    return { symbol: '+', text: `${path}: ${formatValue(f.after, max)}`, forces: f.forcesReplacement };
  if (action === 'delete' || f.after === undefined) return { symbol: '-', text: `${path}: ${formatValue(f.before, max)}`, forces: f.forcesReplacement };
  return { symbol: '~', text: `${path}: ${formatValue(f.before, max)} → ${formatValue(f.after, max)}`, forces: f.forcesReplacement };
}

export const forcesReplacement = '# forces replacement';

/** `sha256:0123456789ab…`: enough to tell versions apart in a review; the JSON output keeps the full digest. */
export function shortDigest(digest: string | undefined): string {
  if (digest === undefined) return '(none)';
  const m = /^([a-z0-9]+):([0-9a-f]{13,})$/.exec(digest);
  return m ? `${m[1]}:${m[2]!.slice(0, 12)}…` : sanitize(digest);
}

/** "1 change", "2 changes". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Counts per action for one group, heal counted as update (as `summarize` does): a plan's summary, for a part of it. */
export type Counts = PlanSummary;

export function countChanges(changes: readonly Change[]): Counts {
  const out: Counts = { create: 0, update: 0, replace: 0, delete: 0, destructive: 0 };
  for (const c of changes) {
    if (c.action === 'noop') continue;
    if (c.action === 'adopt') {
      out.adopt = (out.adopt ?? 0) + 1;
      continue;
    }
    out[c.action === 'heal' ? 'update' : c.action]++;
    if (c.destructive) out.destructive++;
  }
  return out;
}

/** Terraform's closing line, shared by the text and Markdown outputs. */
export function planLine(s: Counts): string {
  const adopt = s.adopt ? `${s.adopt} to adopt, ` : '';
  return `Plan: ${adopt}${s.create} to create, ${s.update} to update, ${s.replace} to replace, ${s.delete} to delete (${s.destructive} destructive).`;
}

/** The mass-delete guard's way out; appended to a held reason that does not say it already. */
const massDeleteFlag = '--allow-mass-delete';

export function heldReason(reason: string): string {
  return reason.includes(massDeleteFlag) ? reason : `${reason}; confirm with ${massDeleteFlag}`;
}

/** Held entries grouped by reason: a mass delete holds many objects for one reason, said once. */
export function heldByReason<T extends { address: string; reason: string }>(held: readonly T[]): [string, string[]][] {
  const groups = new Map<string, string[]>();
  for (const h of held) {
    const list = groups.get(h.reason);
    if (list) list.push(h.address);
    else groups.set(h.reason, [h.address]);
  }
  return [...groups.entries()];
}

/** The cloud's headline: its name, its Kubernetes namespace when planned against the cluster, how many objects change. */
export function cloudHeadline(p: CloudPlan): string {
  const changes = p.changes.length === 0 ? 'no changes' : `${p.changes.length} object changes`;
  return `OpenStackCloud ${sanitize(p.cloud)}${p.namespace ? ` (Kubernetes namespace ${sanitize(p.namespace)})` : ''}: ${changes}`;
}

/** The cloud's changes by chart (`(pruned)` for what the inventory holds and no chart renders any more). */
export function cloudChangesByChart(p: CloudPlan): Map<string, CloudObjectChange[]> {
  const byChart = new Map<string, CloudObjectChange[]>();
  for (const c of p.changes) byChart.set(c.chart || '(pruned)', [...(byChart.get(c.chart || '(pruned)') ?? []), c]);
  return byChart;
}

/** `create Deployment/keystone-api [keystone]`, the first fields of an update, image changes on their own lines. */
export function cloudChangeLines(c: CloudObjectChange): string[] {
  const more = c.fields && c.fields.length > 6 ? ` and ${c.fields.length - 6} more` : '';
  const fields = c.fields && c.action === 'update' ? `: ${c.fields.slice(0, 6).map(sanitize).join(', ')}${more}` : '';
  const head = `${c.action} ${sanitize(c.kind)}/${sanitize(c.name)}${c.chart ? ` [${sanitize(c.chart)}]` : ''}${fields}`;
  const image = (i: NonNullable<CloudObjectChange['images']>[number]): string =>
    `    image ${sanitize(i.container)}: ${sanitize(i.from ?? '(none)')} → ${sanitize(i.to ?? '(none)')}`;
  return [head, ...(c.action === 'create' ? [] : (c.images ?? []).map(image))];
}
