import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * No function of agent/, oci/ or lib/ over 100 lines, as Prettier lays it out
 * (npm run lint checks the layout): one that does two things is cut where it
 * does them, never wrapped or excused (issue 45 retired the "~N lines"
 * exemption comments; none was left true).
 */

const root = join(import.meta.dirname, '..', '..');
const limit = 100;

/** Each function over the limit, as `file:line name (N lines)`. */
function tooLong(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const fn = ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isConstructorDeclaration(n);
    if (fn && n.body) {
      const first = source.getLineAndCharacterOfPosition(n.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(n.getEnd()).line - first + 1;
      const name = n.name?.getText(source) ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(source) : '(anonymous)');
      if (lines > limit) found.push(`${file}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('no long functions', () => {
  it(`no function of agent/, oci/ or lib/ is over ${limit} lines`, () => {
    const files = ['agent', 'oci', 'lib'].flatMap((d) => tsFiles(join(root, d))).map((f) => relative(root, f));
    expect(files.length).toBeGreaterThan(300);
    expect(
      files.flatMap((f) => tooLong(f, readFileSync(join(root, f), 'utf8'))),
      'cut it where it does two things (one function per step, named for it)',
    ).toEqual([]);
  });

  it('finds a planted long function, whatever its comment says', () => {
    const body = Array.from({ length: limit + 1 }, (_, i) => `  total += ${i};`).join('\n');
    const planted = (comment: string): string => `${comment}\nexport const sum = (): number => {\n  let total = 0;\n${body}\n  return total;\n};\n`;
    expect(tooLong('agent/planted.ts', planted('/** Adds. */'))).toEqual([`agent/planted.ts:2 sum (${limit + 5} lines)`]);
    expect(tooLong('agent/planted.ts', planted('/** Adds, one piece (~105 lines): each line reads the one before. */'))).toEqual([`agent/planted.ts:2 sum (${limit + 5} lines)`]);
  });
});
