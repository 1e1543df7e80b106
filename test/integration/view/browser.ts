import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { chromium, type Browser, type Page } from 'playwright-core';

/*
 * The web view's browser tests' kit (issue 52): the bundle built as `npm run build` builds it (into a
 * temporary folder), Debian's Chromium driven headless by playwright-core (nothing downloaded), the
 * screenshots as test artifacts in test-artifacts/view/, and the time to first content measured in
 * the browser itself.
 */
export const root = join(import.meta.dirname, '../../..');
export const artifacts = join(root, 'test-artifacts/view');
const chromiumPath = process.env.KS_CHROMIUM ?? '/usr/bin/chromium';

/** Builds the view's bundle (tsc of view/, then vite) into a fresh folder; returns it. */
export function buildView(): string {
  const out = mkdtempSync(join(tmpdir(), 'ks-view-'));
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'view/tsconfig.json'], { cwd: root, encoding: 'utf8', timeout: 240_000 });
  if (tsc.status !== 0) throw new Error(`tsc -p view failed:\n${tsc.stdout}\n${tsc.stderr}`);
  const vite = spawnSync(process.execPath, [join(root, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'view/vite.config.ts', '--outDir', out, '--emptyOutDir'], { cwd: root, encoding: 'utf8', timeout: 240_000 });
  if (vite.status !== 0) throw new Error(`vite build failed:\n${vite.stdout}\n${vite.stderr}`);
  return out;
}

export async function launch(): Promise<Browser> {
  if (!existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath}: the test bed's browser peer installs Debian's package (bash test/testbed/browser/up.sh), or set KS_CHROMIUM`);
  mkdirSync(artifacts, { recursive: true });
  return chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
}

const types: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };

/** Answers a static file of the bundle, index.html for any other path (the UI routes it). */
export function serveStatic(dir: string, req: IncomingMessage, res: ServerResponse): void {
  const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
  const file = join(dir, path);
  const chosen = existsSync(file) && statSync(file).isFile() ? file : join(dir, 'index.html');
  res.writeHead(200, { 'content-type': types[extname(chosen)] ?? 'application/octet-stream' }).end(readFileSync(chosen));
}

/**
 * Records, in the page, when the first element matching `selector` appears (ms since the
 * navigation started, from performance.now()): the browser's own clock, not the test's.
 */
export async function watchFirstContent(page: Page, selector: string): Promise<void> {
  // Page-side code as text: the tests' tsconfig has no DOM types, the page runs it as it is.
  await page.addInitScript({
    content: `(() => {
      const sel = ${JSON.stringify(selector)};
      const look = () => {
        if (window.__firstContent === undefined && document.querySelector(sel)) window.__firstContent = performance.now();
        return window.__firstContent !== undefined;
      };
      new MutationObserver((_, obs) => { if (look()) obs.disconnect(); }).observe(document, { childList: true, subtree: true });
    })();`,
  });
}

export async function firstContentMs(page: Page): Promise<number> {
  // Asked by evaluate (the view's CSP forbids the eval that waitForFunction's string form needs).
  const deadline = Date.now() + 30_000;
  for (;;) {
    const at: unknown = await page.evaluate('window.__firstContent');
    if (typeof at === 'number') return at;
    if (Date.now() > deadline) throw new Error('no first content within 30 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Records, in the open page, the wall-clock time (Date.now()) the first element matching `selector`
 * appears; seenAt() reads it. Installed by evaluate (the view's CSP allows no eval of the page's own).
 */
export async function watchSeen(page: Page, selector: string): Promise<void> {
  await page.evaluate(`(() => {
    const sel = ${JSON.stringify(selector)};
    window.__seen = window.__seen || {};
    const look = () => { if (!window.__seen[sel] && document.querySelector(sel)) window.__seen[sel] = Date.now(); return !!window.__seen[sel]; };
    if (!look()) new MutationObserver((_, obs) => { if (look()) obs.disconnect(); }).observe(document, { childList: true, subtree: true, characterData: true });
  })()`);
}

export async function seenAt(page: Page, selector: string): Promise<number> {
  return Number(await page.evaluate(`window.__seen && window.__seen[${JSON.stringify(selector)}]`));
}

/** A screenshot in test-artifacts/view/<name>.png (the whole page unless `fullPage` is false: 1 000 rows are tall). */
export async function shot(page: Page, name: string, fullPage = true): Promise<string> {
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}

/** Signs in through the sign-in page, as a person pastes a token. */
export async function signIn(page: Page, base: string, token: string, next = '/'): Promise<void> {
  await page.goto(`${base}/sign-in${next === '/' ? '' : `?next=${encodeURIComponent(next)}`}`);
  await page.getByLabel('Bearer token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => !u.pathname.startsWith('/sign-in'), { timeout: 30_000 });
}
