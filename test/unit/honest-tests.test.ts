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
 * - and the 16 patterns of the second audit (W11): a non-empty "proof" that
 *   proves the opposite (`toEqual([])`) or names another list (`netsOld`);
 *   `for (;;)`, `while`, `for…in`; `.map`/`.some`/`.every` callbacks (also
 *   in `Promise.all`); `expect(list.every(…))`; `if (…) return` before the
 *   expects; `cond && expect`, `?:` with one asserting branch; a `try` whose
 *   `catch` swallows; `objectContaining(s)` of a Set bound earlier;
 *   `toBeGreaterThanOrEqual(0)`; `it.skip`/`skipIf`/`runIf`/`only`.
 *   It also runs in `npm run lint` (lint:tests).
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
  const word = (n: string): RegExp => new RegExp(`(^|[^\\w$.]|\\.\\.\\.)${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w$])`);
  return earlierStatements(list).some((s) => {
    const text = s.getText(sf);
    // The same name (netsOld does not prove nets), and an assertion that fails on [] (toEqual([]) and toHaveLength(0) prove the opposite).
    // The list's own name, or the name it is sliced or filtered from (nets.slice(0, 4) is proven by nets).
    const root = /^[\w$]+/.exec(name)?.[0] ?? name;
    // An assertion statement of its own (a loop that mentions the list's length proves nothing).
    if (!/^\s*expect\s*\(/.test(text) || !(word(name).test(text) || word(base).test(text) || word(root).test(text))) return false;
    if (/toEqual\(\s*\[\s*\]\s*\)|toHaveLength\(\s*0\s*\)|toHaveSize\(\s*0\s*\)|toBeGreaterThanOrEqual\(\s*0\s*\)/.test(text)) return false;
    return /length|toHaveLength|toEqual|toBeGreaterThan|toHaveSize/.test(text);
  });
}

/** `expect(…)` as a call of its own (not a mention in a string or a name). */
function isExpectCall(n: ts.Node): boolean {
  return ts.isCallExpression(n) && ((ts.isIdentifier(n.expression) && n.expression.text === 'expect') || (ts.isPropertyAccessExpression(n.expression) && ts.isIdentifier(n.expression.expression) && n.expression.expression.text === 'expect'));
}

/** The function body a node sits in (a test's callback). */
function enclosingFunction(node: ts.Node): ts.FunctionLikeDeclaration | undefined {
  for (let p = node.parent; p !== undefined; p = p.parent) if (ts.isArrowFunction(p) || ts.isFunctionExpression(p) || ts.isFunctionDeclaration(p) || ts.isMethodDeclaration(p)) return p;
  return undefined;
}

/** A statement or expression that throws or asserts: a catch that does neither swallows the failure. */
function rethrowsOrAsserts(node: ts.Node): boolean {
  let found = false;
  const visit = (n: ts.Node): void => {
    if (found) return;
    if (ts.isThrowStatement(n) || isExpectCall(n)) found = true;
    else ts.forEachChild(n, visit);
  };
  visit(node);
  return found;
}

/** Identifiers bound to `new Set(…)` / `new Map(…)` in this file. */
function setOrMapNames(sf: ts.SourceFile): Set<string> {
  const out = new Set<string>();
  const visit = (n: ts.Node): void => {
    if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer && ts.isNewExpression(n.initializer) && /^(Set|Map)$/.test(n.initializer.expression.getText(sf))) out.add(n.name.text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
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
  const setsAndMaps = setOrMapNames(sf);
  const visit = (n: ts.Node): void => {
    if (ts.isCallExpression(n) && n.expression.getText(sf).endsWith('objectContaining') && n.arguments.some((a) => (ts.isNewExpression(a) && /^(Set|Map)$/.test(a.expression.getText(sf))) || (ts.isIdentifier(a) && setsAndMaps.has(a.text)))) {
      at(n, 'objectContaining(new Set/Map(…)) matches anything: assert an array (e.g. [...set].sort()) instead');
    }
    // Loops whose bound the guard cannot see: for (;;), while, do, for…in.
    if ((ts.isForStatement(n) || ts.isWhileStatement(n) || ts.isDoStatement(n) || ts.isForInStatement(n)) && containsExpect(n.statement)) {
      at(n, 'expect inside a for (;;) / while / for…in loop: it may run zero times; assert the count first and loop with for…of over an asserted list');
    }
    // Callbacks of array methods: .map (also inside Promise.all), .filter, .some, .every, .flatMap run zero times on [].
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && /^(map|flatMap|filter|some|every|find)$/.test(n.expression.name.text) && n.arguments.some(containsExpect) && !provenNonEmpty(n.expression.expression, sf)) {
      at(n, `expect inside ${n.expression.expression.getText(sf).slice(0, 60)}.${n.expression.name.text}(…), not asserted non-empty before: it passes on []`);
    }
    // expect(list.every(pred)).toBe(true): true for [].
    if (isExpectCall(n) && (n as ts.CallExpression).arguments.some((a) => ts.isCallExpression(a) && ts.isPropertyAccessExpression(a.expression) && a.expression.name.text === 'every' && !provenNonEmpty(a.expression.expression, sf))) {
      const arg = (n as ts.CallExpression).arguments[0]!;
      at(n, `expect(${arg.getText(sf).slice(0, 60)}): .every is true for [], and the list is not asserted non-empty before`);
    }
    // cond && expect(…) / cond ? expect(…) : …: the assertion runs only when the condition holds.
    if (ts.isBinaryExpression(n) && (n.operatorToken.kind === ts.SyntaxKind.AmpersandAmpersandToken || n.operatorToken.kind === ts.SyntaxKind.BarBarToken || n.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) && containsExpect(n.right) && !containsExpect(n.left)) {
      at(n, `expect on the right of ${n.operatorToken.getText(sf)}: it does not run when the left side decides`);
    }
    if (ts.isConditionalExpression(n) && containsExpect(n.whenTrue) !== containsExpect(n.whenFalse)) {
      at(n, 'expect in one branch of a ?: only: the other branch asserts nothing');
    }
    // if (…) return before the expects of a test: the rest silently does not run.
    if (ts.isIfStatement(n) && (ts.isReturnStatement(n.thenStatement) || (ts.isBlock(n.thenStatement) && n.thenStatement.statements.some(ts.isReturnStatement) && !containsExpect(n.thenStatement)))) {
      const fn = enclosingFunction(n);
      const body = fn?.body && ts.isBlock(fn.body) ? fn.body : undefined;
      const later = body ? body.statements.slice(body.statements.indexOf(n) + 1) : [];
      if (later.some(containsExpect)) at(n, `if (${n.expression.getText(sf).slice(0, 60)}) return before the test's expects: they do not run when it returns`);
    }
    // try { expect } catch { nothing }: the failure is swallowed.
    if (ts.isTryStatement(n) && containsExpect(n.tryBlock) && n.catchClause && !rethrowsOrAsserts(n.catchClause.block)) {
      at(n, 'expect inside a try whose catch neither rethrows nor asserts: a failed expect is swallowed');
    }
    // Bounds that every value meets.
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ((n.expression.name.text === 'toBeGreaterThanOrEqual' && n.arguments[0]?.getText(sf) === '0') || (n.expression.name.text === 'toBeGreaterThan' && /^-\s*1$/.test(n.arguments[0]?.getText(sf) ?? '')))) {
      at(n, `${n.getText(sf).slice(0, 60)}: every count passes it; assert the count the feature must produce`);
    }
    // Tests that do not run: skip, skipIf, runIf, todo, only.
    if (ts.isPropertyAccessExpression(n) && /^(it|test|describe)$/.test(n.expression.getText(sf)) && /^(skip|skipIf|runIf|todo|only)$/.test(n.name.text)) {
      at(n, `${n.getText(sf)}: a test that does not run (or makes the others not run) proves nothing`);
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

  it('the 16 vacuous patterns of the second audit (W11) are each found, and their honest twins are not', () => {
    // One snippet per line; each must be reported at its own line.
    const vacuous = [
      'expect(nets).toEqual([]); for (const n of nets) expect(n.status).toBe("ACTIVE");',
      'expect(netsOld).toHaveLength(3); for (const n of nets) expect(n.status).toBe("ACTIVE");',
      'for (let i = 0; i < nets.length; i++) expect(nets[i]).toBeDefined();',
      'while (queue.length) expect(queue.pop()).toBeDefined();',
      'nets.map((n) => expect(n.mtu).toBe(1400));',
      'await Promise.all(nets.map(async (n) => expect(await get(n)).toBeDefined()));',
      'nets.some((n) => { expect(n).toBeDefined(); return false; });',
      'expect(nets.every((n) => n.status === "ACTIVE")).toBe(true);',
      'it("x", () => { if (!peer) return; expect(peer.ok).toBe(true); });',
      'ready && expect(status).toBe("Ready");',
      'ready ? expect(status).toBe("Ready") : undefined;',
      'try { expect(a).toBe(1); } catch { /* ignored */ }',
      'const s = new Set([1]); expect(x).toEqual(expect.objectContaining(s));',
      'expect(count).toBeGreaterThanOrEqual(0);',
      'for (const k in obj) expect(obj[k]).toBeDefined();',
      'it.skipIf(!bed.hasGpu)("boots on a GPU", () => expect(1).toBe(1));',
    ];
    expect(vacuous).toHaveLength(16);
    const found = findings(join(testDir, 'v.ts'), vacuous.join('\n')).map((f) => Number(/^test\/v\.ts:(\d+):/.exec(f)?.[1]));
    expect([...new Set(found)].sort((a, b) => a - b)).toEqual(vacuous.map((_, i) => i + 1));
    const honest = [
      'expect(nets).toHaveLength(2); for (const n of nets) expect(n.status).toBe("ACTIVE");',
      'expect(nets.length).toBeGreaterThan(0); expect(nets.every((n) => n.status === "ACTIVE")).toBe(true);',
      'expect(nets).toHaveLength(2); await Promise.all(nets.map(async (n) => expect(await get(n)).toBeDefined()));',
      'try { expect(a).toBe(1); } catch (err) { throw new Error(`a: ${String(err)}`); }',
      'expect(count).toBeGreaterThan(0);',
      'expect([...sets.values()]).toHaveLength(2); for (const v of sets.values()) expect(v).toBeDefined();',
    ];
    expect(findings(join(testDir, 'h.ts'), honest.join('\n'))).toEqual([]);
  });
});
