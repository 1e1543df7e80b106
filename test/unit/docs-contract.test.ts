import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docsPages, linkOf, sidebarLinks } from '../../docs/.vitepress/sidebar.ts';
import { pageScript, readPage, stepsOf } from '../support/docs-page.ts';

// The executable-documentation contract's static half: what every page must be before the docs
// test (test/integration/docs/) runs it against the test bed.
const root = join(import.meta.dirname, '../..');
const docs = join(root, 'docs');
const pages = docsPages();

/** Paragraphs of prose: runs of text lines outside front matter, fences, tables, headings and HTML comments. */
function paragraphs(text: string): { line: number; words: number }[] {
  const lines = text.split('\n');
  const out: { line: number; words: number }[] = [];
  let fence: string | undefined;
  let start = -1;
  let words = 0;
  const flush = (): void => {
    if (start >= 0) out.push({ line: start + 1, words });
    start = -1;
    words = 0;
  };
  let i = 0;
  if (lines[0] === '---') i = lines.indexOf('---', 1) + 1;
  for (; i < lines.length; i++) {
    const l = lines[i]!;
    const f = /^\s*(`{3,}|~{3,})/.exec(l)?.[1];
    if (fence) {
      if (f && f[0] === fence[0] && f.length >= fence.length) fence = undefined;
      continue;
    }
    if (f) {
      flush();
      fence = f;
      continue;
    }
    // A list item starts a paragraph of its own.
    if (l.trim() === '' || /^\s*(#|\||<!--)/.test(l) || /^\s*([-*+]|\d+\.)\s/.test(l)) flush();
    if (l.trim() === '' || /^\s*(#|\||<!--)/.test(l)) continue;
    if (start < 0) start = i;
    words += l.trim().split(/\s+/).length;
  }
  flush();
  return out;
}

describe('the docs contract', () => {
  it('has pages in the four sections', () => {
    for (const section of ['tutorials', 'how-to', 'reference', 'explanation']) expect(pages.some((p) => p.startsWith(`${section}/`)), section).toBe(true);
  });

  it('README.md is at most 300 lines', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(300);
  });

  it('no paragraph in docs/ is over 150 words', () => {
    const long = pages.flatMap((p) => paragraphs(readFileSync(join(docs, p), 'utf8')).filter((x) => x.words > 150).map((x) => `docs/${p}:${x.line}: ${x.words} words`));
    expect(long).toEqual([]);
  });

  it('every shell block carries a run or norun marker, and every marker a reason where one is due', () => {
    const problems = pages.flatMap((p) => readPage(readFileSync(join(docs, p), 'utf8')).problems.map((x) => `docs/${p}:${x}`));
    expect(problems).toEqual([]);
  });

  it('every page is linked from the sidebar (the home page from the nav)', () => {
    const links = new Set(sidebarLinks());
    expect(pages.length).toBeGreaterThan(1);
    expect(pages.filter((p) => p !== 'index.md' && !links.has(linkOf(p)))).toEqual([]);
  });
});

describe('the runner reads and runs a page as the contract says', () => {
  const fixture = [
    '---',
    'testbed: [openstack]',
    '---',
    '# A page',
    '',
    '<!-- run -->',
    '```sh',
    'echo first > out.txt',
    '```',
    '',
    '```yaml',
    '# file: repo/ns/network.yaml',
    'kind: Network',
    '```',
    '',
    '<!-- novalidate: a snippet -->',
    '```yaml',
    'mtu: 1450',
    '```',
    '',
    '<!-- norun: takes an hour -->',
    '```bash',
    'exit 3',
    '```',
    '',
    '<!-- run -->',
    '```console',
    '$ cat out.txt repo/ns/network.yaml',
    'first',
    '$ BROKEN',
    '```',
    '',
  ].join('\n');

  function run(text: string): { code: number; steps: { line: string; output: string }[] } {
    const dir = mkdtempSync(join(tmpdir(), 'ks-docs-unit-'));
    try {
      mkdirSync(join(dir, 'bin'));
      // A stand-in for the CLI: the runner validates non-file yaml blocks with it.
      writeFileSync(join(dir, 'bin/kupenstack'), '#!/bin/sh\necho "validated $2"\n');
      chmodSync(join(dir, 'bin/kupenstack'), 0o755);
      writeFileSync(join(dir, 'page.sh'), pageScript(readPage(text), dir));
      const r = spawnSync('bash', ['-euo', 'pipefail', join(dir, 'page.sh')], { cwd: dir, env: { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}` }, encoding: 'utf8' });
      return { code: r.status ?? 1, steps: stepsOf(r.stdout) };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('finds the front matter, the blocks, their markers and the file to write', () => {
    const page = readPage(fixture);
    expect(page.testbed).toEqual(['openstack']);
    expect(page.problems).toEqual([]);
    expect(page.blocks.map((b) => [b.line, b.lang, b.marker?.kind ?? '', b.file ?? ''])).toEqual([
      [7, 'sh', 'run', ''],
      [11, 'yaml', '', 'repo/ns/network.yaml'],
      [17, 'yaml', 'novalidate', ''],
      [22, 'bash', 'norun', ''],
      [27, 'console', 'run', ''],
    ]);
  });

  it('refuses a shell block without a marker and a norun without a reason', () => {
    expect(readPage('```sh\nls\n```\n\n<!-- norun -->\n```bash\nls\n```\n').problems).toEqual([
      '1: a sh block needs <!-- run --> or <!-- norun: why --> on the line above it',
      '6: <!-- norun --> needs a reason: <!-- norun: why -->',
    ]);
  });

  it('runs the runnable blocks in order, writes # file: blocks, skips norun, and fails at the broken command naming its block', () => {
    const broken = run(fixture);
    expect(broken.code).not.toBe(0);
    expect(broken.steps.map((s) => s.line)).toEqual(['7', '11', '27']);
    expect(broken.steps.at(-1)!.output).toMatch(/^first\n# file: repo\/ns\/network.yaml\nkind: Network\n/);
    expect(broken.steps.at(-1)!.output).toContain('BROKEN: command not found');
    const fixed = run(fixture.replace('$ BROKEN', '$ echo fine'));
    expect(fixed.code).toBe(0);
    expect(fixed.steps.map((s) => s.line)).toEqual(['7', '11', '27', 'end']);
  });

  it('validates a yaml block that is neither a file nor marked novalidate', () => {
    const r = run('```yaml\nkind: Network\n```\n');
    expect(r.code).toBe(0);
    expect(r.steps[0]!.output).toMatch(/^validated .*block-1\.yaml\n$/);
  });
});
