import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 27, item 6: no line of agent/, oci/ or lib/ is over 200 characters.
 * Wrap along the meaning: a long message into concatenated parts, a long
 * signature one parameter a line, a long condition into named booleans.
 * Generated files too: fix the generator (npm run generate), not its output.
 */

const root = join(import.meta.dirname, '..', '..');
const limit = 200;

/** The lines of a source over the limit, as `file:line (N characters)`. */
function longLines(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) => (line.length > limit ? [`${file}:${i + 1} (${line.length} characters)`] : []));
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('lines over 200 characters', () => {
  it(`no line of agent/, oci/ or lib/ is over ${limit} characters`, () => {
    const files = ['agent', 'oci', 'lib'].flatMap((d) => tsFiles(join(root, d))).map((f) => relative(root, f));
    expect(files.length, 'the sources found').toBeGreaterThan(200);
    const long = files.flatMap((f) => longLines(f, readFileSync(join(root, f), 'utf8')));
    expect(long, `wrap each line along its meaning (a generated file: fix its generator and run npm run generate)`).toEqual([]);
  });

  it('finds a planted long line and leaves one of exactly 200 characters alone', () => {
    const planted = ['const short = 1;', `const long = '${'x'.repeat(190)}';`, 'x'.repeat(200)].join('\n');
    expect(longLines('agent/planted.ts', planted)).toEqual(['agent/planted.ts:2 (206 characters)']);
  });
});
