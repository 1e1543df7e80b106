import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Issue 27, item 5: no function of agent/, oci/ or lib/ over ~100 lines
 * without a comment above it saying why it is one piece (the comment names
 * its length, "~N lines", so a reader knows what they are in for).
 */

const root = join(import.meta.dirname, '..', '..');
const limit = 100;

/** Each function over the limit whose leading comment does not say its length, as `file:line name (N lines)`. */
function unexplained(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const fn = ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isConstructorDeclaration(n);
    if (fn && n.body) {
      const first = source.getLineAndCharacterOfPosition(n.getStart()).line;
      const lines = source.getLineAndCharacterOfPosition(n.getEnd()).line - first + 1;
      if (lines > limit) {
        // The comment sits above the statement that holds the function (a `const x = () => …`).
        let holder: ts.Node = n;
        while (ts.isVariableDeclaration(holder.parent) || ts.isVariableDeclarationList(holder.parent) || ts.isVariableStatement(holder.parent)) holder = holder.parent;
        const comments = (ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? []).map((r) => text.slice(r.pos, r.end)).join('\n');
        const name = n.name?.getText(source) ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText(source) : '(anonymous)');
        if (!/~\s*\d+[\s*]+lines/.test(comments)) found.push(`${file}:${first + 1} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('long functions say why', () => {
  it(`no function of agent/, oci/ or lib/ is over ${limit} lines without a comment giving its length and why`, () => {
    const files = ['agent', 'oci', 'lib'].flatMap((d) => tsFiles(join(root, d))).map((f) => relative(root, f));
    expect(files.length).toBeGreaterThan(300);
    expect(files.flatMap((f) => unexplained(f, readFileSync(join(root, f), 'utf8'))), 'cut it along its seams, or say above it why it is one piece (~N lines)').toEqual([]);
  });

  it('finds a planted long function, and accepts it once its comment says why', () => {
    const body = Array.from({ length: limit + 1 }, (_, i) => `  total += ${i};`).join('\n');
    const planted = (comment: string): string => `${comment}\nexport const sum = (): number => {\n  let total = 0;\n${body}\n  return total;\n};\n`;
    expect(unexplained('agent/planted.ts', planted('/** Adds. */'))).toEqual([`agent/planted.ts:2 sum (${limit + 5} lines)`]);
    expect(unexplained('agent/planted.ts', planted('/** Adds, one piece (~105 lines): each line reads the one before. */'))).toEqual([]);
  });
});
