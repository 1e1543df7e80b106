import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/*
 * Issue 46 item 5 (screenshots): the site built as `npm run docs` builds it, served from its static
 * folder on loopback, looked at with Debian's Chromium (headless, driven by playwright-core through
 * executablePath: nothing is downloaded). The PNGs are test artifacts in test-artifacts/docs/.
 */
const root = join(import.meta.dirname, '../../..');
const artifacts = join(root, 'test-artifacts/docs');
const chromiumPath = process.env.KS_CHROMIUM ?? '/usr/bin/chromium';
const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.woff2': 'font/woff2', '.svg': 'image/svg+xml', '.png': 'image/png' };

let out: string;
let server: Server;
let base: string;
let browser: Browser;
const requests: string[] = [];

/** The static folder as a plain host serves it: cleanUrls (`/reference/cli` → reference/cli.html). */
function serve(dir: string): Promise<Server> {
  const s = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    const candidates = [join(dir, path), join(dir, `${path}.html`), join(dir, path, 'index.html')];
    const file = candidates.find((f) => existsSync(f) && statSync(f).isFile());
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

beforeAll(async () => {
  if (!existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath}: the test bed's browser peer installs Debian's package (bash test/testbed/browser/up.sh, or apt-get install -y chromium), or set KS_CHROMIUM`);
  out = mkdtempSync(join(tmpdir(), 'ks-docs-site-'));
  const build = spawnSync(process.execPath, [join(root, 'node_modules/vitepress/bin/vitepress.js'), 'build', 'docs', '--outDir', out], { cwd: root, encoding: 'utf8', timeout: 240_000 });
  expect(build.status, `${build.stdout}\n${build.stderr}`).toBe(0);
  server = await serve(out);
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  mkdirSync(artifacts, { recursive: true });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('the documentation site', () => {
  it('shows the home page and a reference page, with everything from the site itself', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${base}/`, { waitUntil: 'networkidle' });
    await page.screenshot({ path: join(artifacts, 'home.png') });
    await page.goto(`${base}/reference/cli`, { waitUntil: 'networkidle' });
    expect(await page.locator('h1').first().textContent()).toContain('Command line reference');
    expect(await page.locator('.VPSidebar').textContent()).toContain('Reference');
    await page.screenshot({ path: join(artifacts, 'reference-cli.png') });
    // Offline: no font, script or style from anywhere but the site.
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((u) => !u.startsWith(base))).toEqual([]);
    expect(statSync(join(artifacts, 'home.png')).size).toBeGreaterThan(10_000);
    expect(statSync(join(artifacts, 'reference-cli.png')).size).toBeGreaterThan(10_000);
    await page.close();
  }, 120_000);

  it('finds a page by a word of its text (the local search index)', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/reference/cli`, { waitUntil: 'networkidle' });
    await page.locator('.VPNavBarSearch button').first().click();
    await page.locator('.VPLocalSearchBox input').fill('adopt');
    const results = page.locator('.VPLocalSearchBox .results li');
    await results.first().waitFor({ timeout: 20_000 });
    expect(await results.count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(artifacts, 'search.png') });
    await page.close();
  }, 120_000);
});
