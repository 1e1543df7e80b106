import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedPages } from '../../docs/.vitepress/generate/pages.ts';

// The generated reference pages (the CLI from agent/cli/'s commander program, the kinds from schemas/)
// must be what `npm run docs:generate` writes now: a new flag or field without it fails here.
const docs = join(import.meta.dirname, '../../docs');

describe('generated reference pages are up to date', async () => {
  const pages = await generatedPages();

  it('covers the CLI and every kind', () => {
    expect(pages.has('reference/cli.md')).toBe(true);
    expect([...pages.keys()].filter((p) => p.startsWith('reference/kinds/')).length).toBeGreaterThan(15);
  });

  it.each([...pages.keys()])('docs/%s equals its generator output (else: npm run docs:generate)', (path) => {
    const file = join(docs, path);
    expect(existsSync(file), `docs/${path} is missing: npm run docs:generate`).toBe(true);
    expect(readFileSync(file, 'utf8'), `docs/${path} is out of date: npm run docs:generate`).toBe(pages.get(path));
  });

  it('names every command and option of the program, with its default', () => {
    const cli = pages.get('reference/cli.md')!;
    expect(cli).toContain('## kupenstack export');
    expect(cli).toContain('| `--layout <layout>` | one file per kind or per object. One of: `kind`, `object`. | `"kind"` |');
    expect(cli).toContain('### kupenstack image push');
  });
});
