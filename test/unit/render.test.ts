import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { summarize, type Change, type Plan } from '../../agent/plan/plan.ts';
import { renderJson } from '../../agent/plan/render/json.ts';
import { planMarker, renderMarkdown } from '../../agent/plan/render/markdown.ts';
import { renderText } from '../../agent/plan/render/text.ts';
import { fixturePlan } from '../golden/plan.fixture.ts';

// The golden files are the spec of the output: `UPDATE_GOLDEN=1 npx vitest run --project unit test/unit/render.test.ts`
// rewrites them from the renderers; read the diff before committing it.
const goldenDir = 'test/golden';
const update = process.env.UPDATE_GOLDEN === '1';

function golden(file: string, actual: string): void {
  const path = join(goldenDir, file);
  // honest: UPDATE_GOLDEN=1 rewrites the golden files (a developer's act); every other run compares below
  if (update) {
    mkdirSync(goldenDir, { recursive: true });
    writeFileSync(path, actual);
    return;
  }
  expect(actual, `${path} differs; if the change is intended: UPDATE_GOLDEN=1 npx vitest run --project unit test/unit/render.test.ts`).toBe(readFileSync(path, 'utf8'));
}

// Built like the registry's, strict: a schema that Ajv would only half understand fails here.
const schema = JSON.parse(readFileSync('schemas/plan.schema.json', 'utf8')) as Record<string, unknown>;
const validatePlan = new Ajv2020({ allErrors: true, strictSchema: true, strictNumbers: true, strictTuples: true, strictTypes: true, strictRequired: true }).compile(schema);

function emptyPlan(): Plan {
  return { revision: 'b7e1c0d', against: 'main (a1b2c3d)', summary: summarize([]), changes: [], drift: [], held: [], images: [], warnings: [] };
}

function planOf(changes: Change[], extra: Partial<Plan> = {}): Plan {
  return { ...emptyPlan(), ...extra, changes, summary: summarize(changes) };
}

/** Markdown with its fenced code blocks removed: what GitHub interprets as Markdown and HTML. */
function outsideCode(md: string): string {
  const out: string[] = [];
  let fence = 0;
  for (const line of md.split('\n')) {
    const m = /^(`{3,})/.exec(line);
    if (fence === 0 && m) fence = m[1]!.length;
    else if (fence > 0 && /^`+$/.test(line) && line.length >= fence) fence = 0;
    else if (fence === 0) out.push(line);
  }
  expect(fence, 'every code block is closed').toBe(0);
  return out.join('\n');
}

const ansi = /\x1b\[/; // eslint-disable-line no-control-regex

describe('plan renderers: golden files', () => {
  it('text, without colour', () => golden('plan.txt', renderText(fixturePlan, { color: false })));
  it('text, with colour', () => golden('plan.color.txt', renderText(fixturePlan, { color: true })));
  it('markdown', () => golden('plan.md', renderMarkdown(fixturePlan)));
  it('json', () => golden('plan.json', renderJson(fixturePlan)));
});

describe('plan renderers', () => {
  it('JSON output is valid against schemas/plan.schema.json, with absent values as null', () => {
    const doc: unknown = JSON.parse(renderJson(fixturePlan));
    expect(validatePlan(doc), JSON.stringify(validatePlan.errors)).toBe(true);
    const empty: unknown = JSON.parse(renderJson(emptyPlan()));
    expect(validatePlan(empty), JSON.stringify(validatePlan.errors)).toBe(true);
    const created = doc as { changes: { action: string; fields: { before: unknown }[] }[] };
    expect(created.changes[0]!.fields[0]!.before).toBeNull();
    // The no-op in the fixture is not a change.
    expect(created.changes.some((c) => c.action === 'noop')).toBe(false);
    expect(created.changes).toHaveLength(fixturePlan.changes.length - 1);
  });

  it('the schema refuses what the renderer must never produce', () => {
    const doc = JSON.parse(renderJson(fixturePlan)) as { changes: Record<string, unknown>[] };
    expect(validatePlan({ ...doc, extra: 1 })).toBe(false);
    expect(validatePlan({ ...doc, changes: [{ ...doc.changes[0], action: 'noop' }] })).toBe(false);
    expect(validatePlan({ ...doc, changes: [{ ...doc.changes[0], id: 'x' }] })).toBe(false);
  });

  it('never shows a disk-wiping rebuild as a harmless update (terraform-provider-openstack #1986)', () => {
    const text = renderText(fixturePlan, { color: false });
    const line = text.split('\n').find((l) => l.includes('team-a/VirtualMachine/web-2'));
    expect(line).toMatch(/^! ~ +team-a\/VirtualMachine\/web-2 will be updated in place$/);
    // Destructive changes come before the rest.
    expect(text.indexOf('team-a/VirtualMachine/web-2')).toBeLessThan(text.indexOf('team-a/Network/backend'));
    const md = renderMarkdown(fixturePlan);
    const caution = md.slice(md.indexOf('> [!CAUTION]'), md.indexOf('**Plan:'));
    expect(caution).toContain('team-a/VirtualMachine/web-2');
    expect(caution).toContain('`root-disk-lost`');
    expect(md.split('\n')[0]).toBe(planMarker);
  });

  it('colours only when asked', () => {
    const evil = planOf([{ address: 'team-a/Network/\x1b[2Jx', kind: 'Network', namespace: 'team-a', name: '\x1b[2Jx', action: 'create', fields: [{ path: 'name', before: undefined, after: '\x1b[31mred', forcesReplacement: false }], destructive: false, reasons: [] }], { warnings: ['\x1b]8;;http://x\x07link'] });
    for (const plan of [fixturePlan, evil, emptyPlan()]) expect(renderText(plan, { color: false })).not.toMatch(ansi);
    for (const plan of [fixturePlan, evil]) {
      expect(renderMarkdown(plan)).not.toMatch(/\x1b/); // eslint-disable-line no-control-regex
      expect(renderJson(plan)).not.toMatch(/\x1b/); // eslint-disable-line no-control-regex
    }
    expect(renderText(fixturePlan, { color: true })).toMatch(ansi);
    // With colour on, a value's own escape codes still print as text.
    expect(renderText(evil, { color: true })).toContain('\\u{1b}[2Jx');
  });

  it('an empty plan says there is nothing to do', () => {
    expect(renderText(emptyPlan(), { color: false })).toBe('KupenStack plan for b7e1c0d against main (a1b2c3d)\n\nNo changes. The cloud matches b7e1c0d.\n');
    const md = renderMarkdown(emptyPlan());
    expect(md).toContain('No changes. The cloud matches `b7e1c0d`.');
    expect(md).not.toContain('| namespace');
    expect(JSON.parse(renderJson(emptyPlan()))).toMatchObject({ summary: { create: 0, update: 0, replace: 0, delete: 0, destructive: 0 }, changes: [] });
    // Only no-ops, and immutable drift left alone: still no changes, but not a silent "matches".
    const noop = planOf([{ ...fixturePlan.changes[2]!, action: 'noop' }], { drift: [{ address: 'team-a/Subnet/app', path: 'gateway_ip', expected: 'a', actual: 'b', immutable: true }] });
    expect(renderText(noop, { color: false })).toContain('No changes. The cloud matches b7e1c0d, except for the drift reported above.');
  });

  it('a plan with resources that could not be planned never says the cloud matches', () => {
    const partial = { ...emptyPlan(), incomplete: 2 };
    const text = renderText(partial, { color: false });
    expect(text).not.toContain('The cloud matches');
    expect(text).toContain('the plan is incomplete: 2 resources could not be planned');
    const md = renderMarkdown(partial);
    expect(md).not.toContain('The cloud matches');
    expect(md).toContain('The plan is incomplete: 2 resource(s) could not be planned');
  });

  it('escapes Markdown and HTML in names and messages', () => {
    const name = 'x|<img src=x onerror=alert(1)>`**[y](http://evil)**```';
    const address = `team-<b>|/VirtualMachine/${name}`;
    const change: Change = {
      address, kind: 'VirtualMachine', namespace: 'team-<b>|', name, action: 'delete', destructive: true, fields: [{ path: 'name', before: name, after: undefined, forcesReplacement: false }],
      reasons: [{ code: 'root-disk-lost', message: `${name} </details> <script>alert(1)</script>` }], note: '````\n<b>bold</b>',
    };
    const md = renderMarkdown(planOf([change], { warnings: [`warning ${name}`], held: [{ address, action: 'delete', reason: `because ${name}` }], images: [{ address, reference: `r|${name}`, to: 'sha256:00' }], drift: [{ address, path: name, expected: name, actual: 1, immutable: true }] }));
    const prose = outsideCode(md);
    for (const raw of ['<img', 'team-<b>', '<b>bold', '<script', '</details> ', '**[y]', '](http']) expect(prose).not.toContain(raw);
    expect(prose).toContain('&#60;img');
    // Table rows keep their cell count: an escaped `|` does not split a cell.
    const rows = prose.split('\n').filter((l) => l.startsWith('| '));
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.replace(/\\\|/g, '').split('|')).toHaveLength(row.startsWith('| image') || row.includes('sha256') || row.includes('more image') ? 6 : 8);
    // The only HTML left is ours.
    expect(new Set(prose.match(/<\/?[a-z]+/g))).toEqual(new Set(['<details', '<summary', '<b', '</b', '</summary', '</details', '<code', '</code']));
  });

  it('cuts a huge plan to fit a comment, keeping the destructive block and the summary', () => {
    const changes: Change[] = [];
    for (let i = 0; i < 5000; i++) {
      const namespace = `team-${String(i % 40).padStart(2, '0')}`;
      const destructive = i % 10 === 0;
      const name = `vm-${String(i).padStart(4, '0')}`;
      changes.push({
        address: `${namespace}/VirtualMachine/${name}`, kind: 'VirtualMachine', namespace, name, action: destructive ? 'delete' : 'update', destructive,
        reasons: destructive ? [{ code: 'root-disk-lost', message: `${name} is deleted with its root disk` }] : [],
        fields: destructive ? [] : [{ path: 'flavor', before: 'm1.small', after: 'm1.large', forcesReplacement: false }],
      });
    }
    const plan = planOf(changes, { warnings: ['w'], held: [{ address: 'old/Network/n', action: 'delete', reason: 'held' }] });
    const md = renderMarkdown(plan);
    expect(md.length).toBeLessThanOrEqual(65_536);
    expect(md.split('\n')[0]).toBe(planMarker);
    expect(md).toContain('> [!CAUTION]\n> **500 destructive changes**');
    expect(md).toContain('team-00/VirtualMachine/vm-0000');
    expect(md).toContain('**Plan: 0 to create, 4500 to update, 0 to replace, 500 to delete (500 destructive).**');
    expect(md).toContain('| team-39 | 0 | 125 | 0 | 0 | 0 |');
    expect(md).toContain('| team-00 | 0 | 0 | 0 | 125 | 125 |');
    expect(md).toContain('| **total** | 0 | 4500 | 0 | 500 | 500 |');
    expect(md).toContain('--allow-mass-delete');
    const note = /> \[!NOTE\]\n> This plan is too long for one comment \(65536 characters\)\. Not shown here: the details of (\d+) changes \(of 5000\)[^\n]*`kupenstack plan --output text`/.exec(md);
    expect(note).not.toBeNull();
    const shown = md.match(/^(! )?[~-] team-\d\d\/VirtualMachine\/vm-\d{4} /gm) ?? [];
    expect(shown.length + Number(note![1])).toBe(5000);
    outsideCode(md);
    // A smaller limit holds too.
    expect(renderMarkdown(plan, { maxLength: 16_000 }).length).toBeLessThanOrEqual(16_000);
  });

  it('a long held list is cut, but every reason (the way to confirm) is kept', () => {
    const held = Array.from({ length: 2000 }, (_, i) => ({ address: `old/Network/n${i}`, action: 'delete' as const, reason: i < 1000 ? 'first reason' : 'second reason' }));
    const md = renderMarkdown(planOf([], { held }), { maxLength: 20_000 });
    expect(md.length).toBeLessThanOrEqual(20_000);
    expect(md).toContain('> held: first reason; confirm with --allow-mass-delete');
    expect(md).toContain('> held: second reason; confirm with --allow-mass-delete');
    expect(md.match(/more held deletion/g)).toHaveLength(1);
    expect(md).toContain('**Plan: 0 to create, 0 to update, 0 to replace, 0 to delete (0 destructive).**');
    expect(renderText(planOf([], { held }), { color: false })).toContain('Held: 2000 deletions will not run');
  });

  it('a plan that fits is not cut', () => {
    expect(renderMarkdown(fixturePlan)).not.toContain('[!NOTE]');
  });
});
