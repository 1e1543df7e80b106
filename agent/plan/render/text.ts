/**
 * The plan for terminals, after `terraform plan`: destructive changes first
 * and loud (a rebuild that wipes a root disk never reads as a harmless
 * update), then everything else by namespace, then drift, held actions,
 * warnings and the one-line summary.
 */
import type { CloudPlan } from '../../cloud/plan.ts';
import type { Change, Plan } from '../plan.ts';
import {
  actionSymbol,
  actionVerb,
  byNamespace,
  cloudChangeLines,
  cloudChangesByChart,
  cloudHeadline,
  fieldLine,
  forcesReplacement,
  formatValue,
  heldByReason,
  heldReason,
  planLine,
  plural,
  sanitize,
  shortDigest,
  shownChanges,
  type ShownAction,
} from './format.ts';

export interface TextOptions {
  /** ANSI colours; the caller decides (a TTY, NO_COLOR), the renderer never guesses. */
  color: boolean;
}

const sgr = { green: '32', yellow: '33', red: '31', magenta: '35', cyan: '36', bold: '1' } as const;
type Paint = keyof typeof sgr;

const actionPaint: Record<ShownAction, Paint> = { create: 'green', update: 'yellow', heal: 'yellow', adopt: 'cyan', replace: 'magenta', delete: 'red' };
const fieldPaint: Record<string, Paint> = { '+': 'green', '~': 'yellow', '-': 'red' };

/** Field lines sit under the address, past the `! -/+ ` columns. */
const indent = '        ';

export function renderText(plan: Plan, options: TextOptions): string {
  const paint = (p: Paint, s: string): string => (options.color ? `\x1b[${sgr[p]}m${s}\x1b[0m` : s);
  const out: string[] = [];
  const changes = shownChanges(plan.changes);
  const destructive = changes.filter((c) => c.destructive);
  const rest = changes.filter((c) => !c.destructive);

  out.push(paint('bold', `KupenStack plan for ${sanitize(plan.revision)} against ${sanitize(plan.against)}`), '');
  const legend = legendLines(plan, changes);
  if (legend.length > 0) out.push('Symbols:', ...legend.map(([sym, p, what]) => `  ${paint(p, sym.padEnd(3))} ${what}`), '');

  const changeLines = (c: Change): string[] => {
    const action = c.action === 'noop' ? 'update' : c.action;
    const mark = c.destructive ? paint('red', '!') : ' ';
    const lines = [`${mark} ${paint(actionPaint[action], actionSymbol[action].padEnd(3))} ${sanitize(c.address)} ${actionVerb(c)}`];
    for (const r of c.reasons) lines.push(`${indent}${paint('red', `! ${r.code}: ${sanitize(r.message)}`)}`);
    if (c.heal) lines.push(`${indent}# attempt ${c.heal.attempt}: ${sanitize(c.heal.reason)}`);
    for (const f of c.fields) {
      const { symbol, text, forces } = fieldLine(action, f);
      lines.push(`${indent}${paint(fieldPaint[symbol] ?? 'yellow', symbol)} ${text}${forces ? ` ${paint('magenta', forcesReplacement)}` : ''}`);
    }
    if (c.note) lines.push(`${indent}# ${sanitize(c.note)}`);
    return lines;
  };

  if (destructive.length > 0) {
    out.push(paint('red', `! ${plural(destructive.length, 'destructive change')}: they lose disks, data or addresses. Read these first.`), '');
    for (const [, group] of byNamespace(destructive)) for (const c of group) out.push(...changeLines(c), '');
  }

  for (const [namespace, group] of byNamespace(rest)) {
    out.push(paint('bold', `${sanitize(namespace)}:`), '');
    for (const c of group) out.push(...changeLines(c), '');
  }

  if (plan.images.length > 0) {
    out.push('Image tags that now resolve to a new digest:', '');
    for (const i of plan.images)
      out.push(`  ${paint('yellow', '⟳')} ${sanitize(i.address)} (${sanitize(i.reference)}): ${shortDigest(i.from)} → ${shortDigest(i.to)}`);
    out.push('');
  }

  const mutable = plan.drift.filter((d) => !d.immutable);
  const immutable = plan.drift.filter((d) => d.immutable);
  if (mutable.length > 0) {
    out.push('Drift: changed outside Git, will be corrected:', '');
    for (const d of mutable)
      out.push(`  ${paint('yellow', '~')} ${sanitize(d.address)} ${sanitize(d.path)}: ${formatValue(d.actual)} → ${formatValue(d.expected)}`);
    out.push('');
  }
  if (immutable.length > 0) {
    // Immutable drift is shown, never hidden (someone changed the cloud outside Git), but changing it would mean a replace nobody asked for.
    out.push('Drift: changed outside Git, reported, left alone (OpenStack cannot change it in place):', '');
    for (const d of immutable)
      out.push(
        `  ${paint('yellow', '≠')} ${sanitize(d.address)} ${sanitize(d.path)}: ${formatValue(d.actual)} in the cloud, ${formatValue(d.expected)} in Git`,
      );
    out.push('');
  }

  if (plan.held.length > 0) {
    out.push(paint('red', `Held: ${plural(plan.held.length, 'deletion')} will not run (mass-delete guard):`), '');
    for (const [reason, addresses] of heldByReason(plan.held)) {
      for (const a of addresses) out.push(`  ${paint('red', '-')}   ${sanitize(a)}`);
      out.push(`${indent}held: ${sanitize(heldReason(reason))}`);
    }
    out.push('');
  }

  for (const w of plan.warnings) out.push(`${paint('yellow', 'Warning:')} ${sanitize(w)}`);
  if (plan.warnings.length > 0) out.push('');

  out.push(closingLine(plan, changes.length, paint));
  if (plan.cloud) out.push('', ...cloudLines(plan.cloud));
  return `${out.join('\n')}\n`;
}

/** The cloud's section, after the resources: its object changes by chart, then (when anything changes) its steps in order. */
function cloudLines(p: CloudPlan): string[] {
  const out = [cloudHeadline(p)];
  for (const [chart, changes] of cloudChangesByChart(p)) {
    out.push(`  chart ${sanitize(chart)}:`);
    for (const c of changes) out.push(...cloudChangeLines(c).map((line) => `    ${line}`));
  }
  if (p.changes.length > 0 && p.steps.length > 0) out.push('  steps, in order:', ...p.steps.map((s) => `    ${sanitize(s)}`));
  return out;
}

function closingLine(plan: Plan, shown: number, paint: (p: Paint, s: string) => string): string {
  if (plan.incomplete) {
    const head = shown === 0 ? 'No changes found so far' : planLine(plan.summary);
    return paint('red', `${head}; the plan is incomplete: ${plural(plan.incomplete, 'resource')} could not be planned (errors below).`);
  }
  if (shown === 0 && plan.held.length === 0) {
    const rev = sanitize(plan.revision);
    // Immutable drift is left alone, so there is nothing to do; still, "matches" must not contradict the section above.
    return plan.drift.length > 0 ? `No changes. The cloud matches ${rev}, except for the drift reported above.` : `No changes. The cloud matches ${rev}.`;
  }
  const line = planLine(plan.summary);
  return plan.summary.destructive > 0 ? paint('red', line) : paint('bold', line);
}

/** Terraform's legend: only the symbols this plan uses. */
function legendLines(plan: Plan, changes: readonly Change[]): [string, Paint, string][] {
  const used = new Set(changes.map((c) => c.action));
  const out: [string, Paint, string][] = [];
  if (used.has('adopt')) out.push(['<=', 'cyan', 'adopt: take over an existing object (only its ownership marker is written)']);
  if (used.has('create')) out.push(['+', 'green', 'create']);
  if (used.has('update') || used.has('heal')) out.push(['~', 'yellow', 'update in place (or heal)']);
  if (used.has('replace')) out.push(['-/+', 'magenta', 'replace: delete, then create anew']);
  if (used.has('delete') || plan.held.length > 0) out.push(['-', 'red', 'delete']);
  if (changes.some((c) => c.destructive)) out.push(['!', 'red', 'destructive: loses a disk, data or addresses']);
  if (plan.images.length > 0) out.push(['⟳', 'yellow', 'image tag that now resolves to a new digest']);
  if (plan.drift.some((d) => d.immutable)) out.push(['≠', 'yellow', 'drift left alone']);
  return out;
}
