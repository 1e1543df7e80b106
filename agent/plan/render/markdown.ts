/**
 * The plan as a pull-request comment, after Atlantis: a hidden marker (so CI
 * updates its comment instead of adding one), destructive changes first in a
 * CAUTION alert, a summary table, then one collapsible diff per namespace.
 * The comment fits in `maxLength` (GitHub refuses comments over 65 536
 * characters): detail is dropped first, never the destructive block or the
 * summary, and a note says what was left out.
 */
import type { Change, Plan } from '../plan.ts';
import {
  actionSymbol,
  actionVerb,
  byNamespace,
  cloudChangeLines,
  cloudChangesByChart,
  cloudHeadline,
  countChanges,
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
  type Counts,
} from './format.ts';

export interface MarkdownOptions {
  /** Longest comment, in UTF-16 code units (what GitHub counts). Default 65 536. */
  maxLength?: number;
}

/** First line of every rendered plan: CI finds its previous comment by it. */
export const planMarker = '<!-- kupenstack-plan -->';

const fullPlanCommand = 'kupenstack plan --output text';

/** Room kept for the truncation note, whose numbers are known only at the end. */
const noteReserve = 600;

/**
 * Text outside code: `&`, `<`, `>` (HTML), `|` (table cells), backticks,
 * and the inline Markdown that could fake emphasis, links or strike-through.
 * Entities rather than backslashes: they also hold inside HTML `<summary>`.
 */
function escapeMarkdown(s: string): string {
  return sanitize(s).replace(/[&<>|`\\*_[\]~]/g, (ch) => `&#${ch.codePointAt(0)};`);
}

/** Inline code that no value can close early: the delimiter is longer than any backtick run inside. */
function inlineCode(s: string): string {
  const clean = sanitize(s);
  const ticks = '`'.repeat(longestRun(clean, '`') + 1);
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${clean}${pad}${ticks}`;
}

/** Code in a table cell: GFM splits rows on `|` even inside backticks, so HTML code with escaped text instead. */
function codeCell(s: string): string {
  return `<code>${escapeMarkdown(s)}</code>`;
}

/** A fenced block no value can close early, for the same reason. */
function codeBlock(lang: string, lines: readonly string[]): string {
  const body = lines.join('\n');
  const fence = '`'.repeat(Math.max(3, longestRun(body, '`') + 1));
  return `${fence}${lang}\n${body}\n${fence}`;
}

function longestRun(s: string, ch: string): number {
  let best = 0;
  let run = 0;
  for (const c of s) {
    run = c === ch ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return best;
}

/** One change as lines of a ```diff block: GitHub colours `+` green, `-` red, `!` as changed. */
function diffLines(c: Change): string[] {
  const action = c.action === 'noop' ? 'update' : c.action;
  const lines = [`${c.destructive ? '! ' : ''}${actionSymbol[action]} ${sanitize(c.address)} ${actionVerb(c)}`];
  for (const r of c.reasons) lines.push(`!     ${sanitize(r.code)}: ${sanitize(r.message)}`);
  if (c.heal) lines.push(`#     attempt ${c.heal.attempt}: ${sanitize(c.heal.reason)}`);
  for (const f of c.fields) {
    const { symbol, text, forces } = fieldLine(action, f);
    lines.push(`${symbol}     ${text}${forces ? `  ${forcesReplacement}` : ''}`);
  }
  if (c.note) lines.push(`#     ${sanitize(c.note)}`);
  return lines;
}

/** Items while they fit in `budget`, then one "… and N more" line (whose room is kept). */
function fit(items: readonly string[], budget: number, more: (n: number) => string): { lines: string[]; omitted: number } {
  const cost = (s: string): number => s.length + 1;
  const all = items.reduce((n, s) => n + cost(s), 0);
  if (all <= budget) return { lines: [...items], omitted: 0 };
  const room = budget - cost(more(items.length));
  const lines: string[] = [];
  let used = 0;
  for (const item of items) {
    if (used + cost(item) > room) break;
    lines.push(item);
    used += cost(item);
  }
  const omitted = items.length - lines.length;
  return { lines: [...lines, more(omitted)], omitted };
}

const countCells = (c: Counts): string => `${c.create} | ${c.update} | ${c.replace} | ${c.delete} | ${c.destructive}`;

export function renderMarkdown(plan: Plan, options: MarkdownOptions = {}): string {
  const maxLength = options.maxLength ?? 65_536;
  const changes = shownChanges(plan.changes);
  const groups = byNamespace(changes);
  const head = [planMarker, `### KupenStack plan for ${inlineCode(plan.revision)} against ${inlineCode(plan.against)}`];

  if (plan.incomplete)
    head.push(
      '',
      `**The plan is incomplete: ${plan.incomplete} resource(s) could not be planned** (errors in the run's log); what follows is what could be planned.`,
    );
  else if (changes.length === 0 && plan.held.length === 0) {
    const rev = inlineCode(plan.revision);
    head.push(
      '',
      plan.drift.length > 0 ? `No changes. The cloud matches ${rev}, except for the drift reported below.` : `No changes. The cloud matches ${rev}.`,
    );
  }

  // What is never dropped comes first, each part with a cap so that together they leave room for detail.
  const omitted = { changes: 0, destructive: 0, namespaces: 0, held: 0, warnings: 0, images: 0, drift: 0, cloud: 0 };
  const caution = cautionBlock(changes, Math.floor(maxLength * 0.35), (n) => (omitted.destructive = n));
  const summary = changes.length > 0 || plan.held.length > 0 ? summaryBlock(plan, groups, Math.floor(maxLength * 0.15), (n) => (omitted.namespaces = n)) : [];
  const held = heldBlock(plan, Math.floor(maxLength * 0.1), (n) => (omitted.held = n));
  const size = (parts: readonly string[]): number => parts.reduce((n, p) => n + p.length + 2, 0);
  let budget = maxLength - size([...head, ...caution, ...summary, ...held]) - noteReserve;

  // Then detail, most telling first, while it fits.
  const take = (build: (room: number) => { text: string; omitted: number }, count: (n: number) => void): string => {
    const { text, omitted: n } = build(budget);
    count(n);
    budget -= text.length + 2;
    return text;
  };
  const warnings = take(
    (room) => warningsBlock(plan.warnings, room),
    (n) => (omitted.warnings = n),
  );
  const images = take(
    (room) => imagesBlock(plan, room),
    (n) => (omitted.images = n),
  );
  const drift = take(
    (room) => driftBlock(plan, room),
    (n) => (omitted.drift = n),
  );
  const details: string[] = [];
  for (const [namespace, group] of groups) {
    const block = take(
      (room) => detailsBlock(namespace, group, room),
      (n) => (omitted.changes += n),
    );
    if (block) details.push(block);
  }

  const cloud = take(
    (room) => cloudBlock(plan, room),
    (n) => (omitted.cloud = n),
  );

  const note = truncationNote(omitted, changes.length, maxLength);
  const parts = [head.join('\n'), ...caution, ...summary, ...(note ? [note] : []), ...held, warnings, images, ...details, drift, cloud].filter((p) => p !== '');
  return `${parts.join('\n\n')}\n`;
}

function cautionBlock(changes: readonly Change[], budget: number, count: (n: number) => void): string[] {
  const destructive = byNamespace(changes.filter((c) => c.destructive)).flatMap(([, g]) => g);
  if (destructive.length === 0) return [];
  const items = destructive.map((c) => {
    const action = c.action === 'noop' ? 'update' : c.action;
    const lines = [`> - ${inlineCode(actionSymbol[action])} **${escapeMarkdown(c.address)}** ${actionVerb(c)}`];
    for (const r of c.reasons) lines.push(`>   - ${inlineCode(r.code)}: ${escapeMarkdown(r.message)}`);
    if (c.reasons.length === 0) lines.push('>   - destructive (no reason given)');
    return lines.join('\n');
  });
  const head = ['> [!CAUTION]', `> **${plural(destructive.length, 'destructive change')}**: they lose disks, data or addresses. Review these first.`, '>'];
  const { lines, omitted } = fit(
    items,
    budget - head.join('\n').length,
    (n) => `> - … and ${plural(n, 'more destructive change')}: see the full plan with ${inlineCode(fullPlanCommand)}.`,
  );
  count(omitted);
  return [[...head, ...lines].join('\n')];
}

function summaryBlock(plan: Plan, groups: readonly [string, Change[]][], budget: number, count: (n: number) => void): string[] {
  const line = `**${planLine(plan.summary)}**`;
  if (groups.length === 0) return [line];
  const rows = groups.map(([namespace, group]) => `| ${escapeMarkdown(namespace)} | ${countCells(countChanges(group))} |`);
  const head = ['| namespace | `+` create | `~` update | `-/+` replace | `-` delete | `!` destructive |', '|:--|--:|--:|--:|--:|--:|'];
  const total = `| **total** | ${countCells(plan.summary)} |`;
  // Thousands of namespaces would crowd out everything else: the rest is summed into one row.
  const { lines, omitted } = fit(rows, budget - head.join('\n').length - total.length - line.length - 4, (n) => {
    const rest = countChanges(groups.slice(groups.length - n).flatMap(([, g]) => g));
    return `| … ${plural(n, 'more namespace')} | ${countCells(rest)} |`;
  });
  count(omitted);
  return [line, [...head, ...lines, total].join('\n')];
}

function heldBlock(plan: Plan, budget: number, count: (n: number) => void): string[] {
  if (plan.held.length === 0) return [];
  const head = [
    '> [!WARNING]',
    `> **${plural(plan.held.length, 'deletion')} held** by the mass-delete guard: ${plan.held.length === 1 ? 'it does' : 'they do'} not run until confirmed.`,
  ];
  const groups = heldByReason(plan.held);
  // The reasons say the way out (--allow-mass-delete): they are kept whatever the cut.
  const reasons = groups.map(([reason]) => `> held: ${escapeMarkdown(heldReason(reason))}`);
  const items = groups.flatMap(([, addresses]) => addresses.map((a) => `> - \`-\` ${escapeMarkdown(a)}`));
  const fixed = [...head, ...reasons].join('\n').length + groups.length * 3 + 3;
  const { lines, omitted } = fit(items, budget - fixed, (n) => `> - … and ${plural(n, 'more held deletion')}`);
  count(omitted);
  // Each reason follows its own addresses; a cut list ends in the "… and N more" line.
  const kept = lines.length - (omitted > 0 ? 1 : 0);
  const out = [...head];
  let next = 0;
  let cut = false;
  groups.forEach(([, addresses], i) => {
    const shown = Math.min(addresses.length, kept - next);
    out.push('>', ...lines.slice(next, next + shown));
    // The cut falls in this group: its "… and N more" line goes before its reason.
    if (shown < addresses.length && !cut) {
      out.push(lines[lines.length - 1]!);
      cut = true;
    }
    next += shown;
    out.push('>', reasons[i]!);
  });
  return [out.join('\n')];
}

function warningsBlock(warnings: readonly string[], budget: number): { text: string; omitted: number } {
  if (warnings.length === 0) return { text: '', omitted: 0 };
  const head = '#### Warnings\n';
  if (budget < head.length + 80) return { text: '', omitted: warnings.length };
  const items = warnings.map((w) => `- ${escapeMarkdown(w)}`);
  const { lines, omitted } = fit(items, budget - head.length, (n) => `- … and ${plural(n, 'more warning')}`);
  return { text: `${head}\n${lines.join('\n')}`, omitted };
}

function imagesBlock(plan: Plan, budget: number): { text: string; omitted: number } {
  if (plan.images.length === 0) return { text: '', omitted: 0 };
  const head = '#### ⟳ Image tags that now resolve to a new digest\n\n| image | reference | from | to |\n|:--|:--|:--|:--|';
  const rows = plan.images.map(
    (i) => `| ${escapeMarkdown(i.address)} | ${codeCell(i.reference)} | ${codeCell(shortDigest(i.from))} | ${codeCell(shortDigest(i.to))} |`,
  );
  if (budget < head.length + 120) return { text: '', omitted: plan.images.length };
  const { lines, omitted } = fit(rows, budget - head.length, (n) => `| … ${plural(n, 'more image')} | | | |`);
  return { text: [head, ...lines].join('\n'), omitted };
}

function driftBlock(plan: Plan, budget: number): { text: string; omitted: number } {
  if (plan.drift.length === 0) return { text: '', omitted: 0 };
  const mutable = plan.drift.filter((d) => !d.immutable).length;
  const immutable = plan.drift.length - mutable;
  const parts = [
    mutable > 0 ? `${mutable} will be corrected` : '',
    immutable > 0 ? `${immutable} reported, left alone (OpenStack cannot change ${immutable === 1 ? 'it' : 'them'} in place)` : '',
  ].filter(Boolean);
  const head = `#### Drift: ${plural(plan.drift.length, 'field')} changed outside Git\n\n${parts.join('; ')}.`;
  // Immutable drift first: it is the part nothing else in the plan mentions.
  const sorted = [...plan.drift.filter((d) => d.immutable), ...plan.drift.filter((d) => !d.immutable)];
  const lines = sorted.map((d) =>
    d.immutable
      ? `≠ ${sanitize(d.address)} ${sanitize(d.path)}: ${formatValue(d.actual)} in the cloud, ${formatValue(d.expected)} in Git  # reported, left alone`
      : `~ ${sanitize(d.address)} ${sanitize(d.path)}: ${formatValue(d.actual)} → ${formatValue(d.expected)}  # will be corrected`,
  );
  if (budget < head.length + 200) return { text: '', omitted: plan.drift.length };
  const fitted = fit(lines, budget - head.length - 20, (n) => `# … and ${plural(n, 'more drifted field')}`);
  return { text: `${head}\n\n${codeBlock('diff', fitted.lines)}`, omitted: fitted.omitted };
}

function detailsBlock(namespace: string, group: readonly Change[], budget: number): { text: string; omitted: number } {
  const c = countChanges(group);
  const counts = [
    c.create && `${c.create} to create`,
    c.update && `${c.update} to update`,
    c.replace && `${c.replace} to replace`,
    c.delete && `${c.delete} to delete`,
  ]
    .filter(Boolean)
    .join(', ');
  const open = `<details><summary><b>${escapeMarkdown(namespace)}</b>: ${counts}${c.destructive ? ` (<b>${c.destructive} destructive</b>)` : ''}</summary>`;
  const close = '</details>';
  const overhead = open.length + close.length + 40;
  const entries = group.map((ch) => diffLines(ch).join('\n'));
  // Not even one change fits: drop the block; the summary table still counts the namespace.
  if (budget < overhead + (entries[0]?.length ?? 0) + 80) return { text: '', omitted: group.length };
  const { lines, omitted } = fit(entries, budget - overhead, (n) => `# … and ${plural(n, 'more change')} in ${sanitize(namespace)}, not shown`);
  return { text: `${open}\n\n${codeBlock('diff', lines)}\n\n${close}`, omitted };
}

/** The OpenStackCloud's section: its Kubernetes object changes by chart in one block, then (when anything changes) its steps in order. */
function cloudBlock(plan: Plan, budget: number): { text: string; omitted: number } {
  const p = plan.cloud;
  if (!p) return { text: '', omitted: 0 };
  const head = `#### ${escapeMarkdown(cloudHeadline(p))}`;
  const steps = p.changes.length > 0 && p.steps.length > 0 ? ['', 'Steps, in order:', '', ...p.steps.map((s) => `- ${escapeMarkdown(s)}`)] : [];
  if (p.changes.length === 0) return { text: head, omitted: 0 };
  const entries = [...cloudChangesByChart(p)].flatMap(([chart, changes]) => [
    `chart ${sanitize(chart)}:`,
    ...changes.flatMap((c) => cloudChangeLines(c).map((line) => `  ${line}`)),
  ]);
  const overhead = head.length + steps.reduce((n, s) => n + s.length + 1, 0) + 20;
  const { lines, omitted } = fit(entries, budget - overhead, (n) => `… and ${plural(n, 'more line')}, not shown`);
  return { text: [head, '', codeBlock('text', lines), ...steps].join('\n'), omitted };
}

function truncationNote(omitted: Record<string, number>, changes: number, maxLength: number): string {
  const dropped = Object.values(omitted).some((n) => n > 0);
  if (!dropped) return '';
  const what = [
    omitted.changes ? `the details of ${plural(omitted.changes, 'change')} (of ${changes})` : '',
    omitted.destructive ? plural(omitted.destructive, 'destructive change') + ' from the list above' : '',
    omitted.namespaces ? plural(omitted.namespaces, 'namespace') + ' from the table (summed in one row)' : '',
    omitted.held ? plural(omitted.held, 'held deletion') : '',
    omitted.warnings ? plural(omitted.warnings, 'warning') : '',
    omitted.images ? plural(omitted.images, 'image tag') : '',
    omitted.drift ? plural(omitted.drift, 'drifted field') : '',
    omitted.cloud ? plural(omitted.cloud, 'line') + " of the OpenStackCloud's changes" : '',
  ].filter(Boolean);
  return `> [!NOTE]\n> This plan is too long for one comment (${maxLength} characters). Not shown here: ${what.join('; ')}. See the full plan with ${inlineCode(fullPlanCommand)}.`;
}
