import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Guard rails over test/: patterns that let a test pass while its feature is
 * broken. Each finding names file:line; a deliberate exception carries a
 * `// honest: <why>` comment on the line before (or the same line).
 *
 * - `objectContaining(new Set(…))` / `new Map(…)`: a Set has no own
 *   properties, so it matches anything.
 * - an `expect` inside a `for … of` / `.forEach` over a list that was not
 *   asserted non-empty before the loop (a vacuous loop passes on []).
 * - an `expect` inside an `if`: the assertion silently does not run when the
 *   condition (often a property of the test bed) is false.
 */

const root = join(import.meta.dirname, '..', '..');
const testDir = join(root, 'test');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : tsFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

function containsExpect(node: ts.Node): boolean {
  let found = false;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === 'expect') found = true;
    else if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ts.isIdentifier(n.expression.expression) && n.expression.expression.text === 'expect') found = true;
    else ts.forEachChild(n, visit);
  };
  visit(node);
  return found;
}

/** Statements before `node` in its enclosing block (the place a non-empty assertion must be). */
function earlierStatements(node: ts.Node): ts.Statement[] {
  let child: ts.Node = node;
  for (let p = node.parent; p !== undefined; child = p, p = p.parent) {
    if (ts.isBlock(p) || ts.isSourceFile(p)) {
      const i = p.statements.indexOf(child as ts.Statement);
      return p.statements.slice(0, Math.max(i, 0));
    }
  }
  return [];
}

/** The list is a literal with elements, or an earlier statement asserts on its length or whole content. */
function provenNonEmpty(list: ts.Expression, sf: ts.SourceFile): boolean {
  let e = list;
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
  if (ts.isArrayLiteralExpression(e)) return e.elements.length > 0;
  // A name bound (const) to a non-empty array literal in this file.
  if (ts.isIdentifier(e)) {
    let literal = false;
    const find = (n: ts.Node): void => {
      if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text === e.text && n.initializer !== undefined && ts.isVariableDeclarationList(n.parent) && n.parent.flags & ts.NodeFlags.Const) {
        let init = n.initializer;
        while (ts.isAsExpression(init) || ts.isParenthesizedExpression(init)) init = init.expression;
        if (ts.isArrayLiteralExpression(init) && init.elements.length > 0) literal = true;
      }
      if (!literal) ts.forEachChild(n, find);
    };
    find(sf);
    if (literal) return true;
  }
  if (ts.isObjectLiteralExpression(e)) return true;
  // Object.entries({...literal}) and the like
  if (ts.isCallExpression(e) && e.arguments.some((a) => ts.isObjectLiteralExpression(a) || (ts.isArrayLiteralExpression(a) && a.elements.length > 0))) return true;
  const name = e.getText(sf);
  const base = name.replace(/\.(keys|values|entries)\(\)$/, '').replace(/\(.*$/s, '');
  return earlierStatements(list).some((s) => {
    const text = s.getText(sf);
    return text.includes('expect') && (text.includes(name) || text.includes(base)) && /length|toHaveLength|toEqual|toBeGreaterThan|toHaveSize/.test(text);
  });
}

function excused(sf: ts.SourceFile, node: ts.Node): boolean {
  const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
  const lines = sf.text.split('\n');
  return [lines[line - 1] ?? '', lines[line] ?? ''].some((l) => l.includes('// honest:'));
}

export function findings(file: string, text: string): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const at = (n: ts.Node, what: string): void => {
    if (excused(sf, n)) return;
    out.push(`${relative(root, file)}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}: ${what}`);
  };
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && n.expression.getText(sf).endsWith('objectContaining') && n.arguments.some((a) => ts.isNewExpression(a) && /^(Set|Map)$/.test(a.expression.getText(sf)))) {
      at(n, 'objectContaining(new Set/Map(…)) matches anything: assert an array (e.g. [...set].sort()) instead');
    }
    if (ts.isForOfStatement(n) && containsExpect(n.statement) && !provenNonEmpty(n.expression, sf)) {
      at(n, `expect inside a loop over ${n.expression.getText(sf).slice(0, 60)}, not asserted non-empty before: the loop passes on []`);
    }
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'forEach' && n.arguments.some(containsExpect) && !provenNonEmpty(n.expression.expression, sf)) {
      at(n, `expect inside ${n.expression.expression.getText(sf).slice(0, 60)}.forEach, not asserted non-empty before: it passes on []`);
    }
    // An if/else that asserts in both branches always asserts something; an if that asserts in one branch only may assert nothing.
    const branches = ts.isIfStatement(n) ? [containsExpect(n.thenStatement), n.elseStatement !== undefined && containsExpect(n.elseStatement)] : [];
    if (ts.isIfStatement(n) && branches.includes(true) && branches.includes(false)) {
      at(n, `expect inside if (${n.expression.getText(sf).slice(0, 60)}): the assertion does not run when the condition is false; assert the condition, or both branches' outcome, unconditionally`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

describe('honest tests: patterns that pass while the feature is broken are refused in test/', () => {
  it('no test file uses objectContaining(new Set), a vacuous loop of expects, or an expect inside an if', () => {
    const all = tsFiles(testDir)
      .filter((f) => !f.endsWith('honest-tests.test.ts'))
      .flatMap((f) => findings(f, readFileSync(f, 'utf8')));
    expect(all).toEqual([]);
  });

  it('the checks find what they are for (so this guard itself can fail)', () => {
    const bad = [
      "expect(new Set(levels)).toEqual(expect.objectContaining(new Set([20, 30])));",
      'for (const net of nets) expect(net.status).toBe("ACTIVE");',
      'items.forEach((i) => expect(i).toBeDefined());',
      'if (bed.canExtend) expect(size).toBe(2);',
    ].join('\n');
    expect(findings(join(testDir, 'x.ts'), bad).map((f) => f.replace(/: .*/, ''))).toEqual(['test/x.ts:1', 'test/x.ts:2', 'test/x.ts:3', 'test/x.ts:4']);
    const good = [
      'expect(nets).toHaveLength(2);',
      'for (const net of nets) expect(net.status).toBe("ACTIVE");',
      'for (const k of ["a", "b"]) expect(k).toBeTruthy();',
      '// honest: a property of the object under test, both branches asserted below',
      'if (x) expect(y).toBe(1);',
      'if (a) expect(b).toBe(1);',
      'else expect(b).toBe(2);',
      'const kinds = ["Network", "Subnet"];',
      'for (const k of kinds) expect(k).toBeTruthy();',
    ].join('\n');
    expect(findings(join(testDir, 'y.ts'), good)).toEqual([]);
  });
});
