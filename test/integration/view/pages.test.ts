import { rmSync, statSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectSummary } from '../../../agent/view/api.ts';
import { buildView, firstContentMs, launch, shot, signIn, watchFirstContent } from './browser.ts';
import { ContractDouble } from './contract-double.ts';

/*
 * Issue 52, the browser half on its own: the bundle `npm run build` makes, in Debian's headless
 * Chromium, against a double that answers agent/view/api.ts's contract. Every page by its URL,
 * the 403 page, live re-reads without a reload, keyboard reach, and 1 000 objects in a namespace
 * (time to first content measured in the browser). The same pages on the real server, API server
 * and OpenStack: real-cloud.test.ts.
 */
let bundle: string;
let api: ContractDouble;
let base: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  bundle = buildView();
  api = new ContractDouble(bundle);
  base = await api.start();
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const outside: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(base)) outside.push(r.url());
  });
  await signIn(page, base, api.token);
  // Offline: nothing but the view's own server (no CDN, no font).
  expect(outside).toEqual([]);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  if (bundle) rmSync(bundle, { recursive: true, force: true });
});

describe('the web view against its API contract', () => {
  it('sends a page opened before sign-in to sign-in, and back to it after', async () => {
    const fresh = await browser.newPage();
    await fresh.goto(`${base}/namespaces/team-a`);
    await fresh.waitForURL(`${base}/sign-in?next=%2Fnamespaces%2Fteam-a`);
    await shot(fresh, 'sign-in');
    await fresh.getByLabel('Bearer token').fill('not-a-token');
    await fresh.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => fresh.getByRole('alert').textContent()).toContain('does not accept this token');
    await fresh.getByLabel('Bearer token').fill(api.token);
    await fresh.getByRole('button', { name: 'Sign in' }).click();
    await fresh.waitForURL(`${base}/namespaces/team-a`);
    expect(await fresh.locator('h1').textContent()).toContain('Namespace team-a');
    await fresh.close();
  });

  it('shows the overview, the Sync tree with OpenStack ids and reference links, the object page and the plan', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'team-a', exact: true }).first().waitFor();
    expect(await page.locator('table.syncs').textContent()).toContain('team-a: a second network');
    expect(await page.locator('.diagnostics').first().textContent()).toContain('team-a/vm.yaml:12:5');
    await shot(page, 'overview');
    await page.locator('table.syncs').getByRole('link', { name: 'team-a' }).click();
    await page.waitForURL(`${base}/syncs/team-a`);
    const vmRow = page.locator('[data-object="VirtualMachine/vm-a"]');
    expect(await vmRow.textContent()).toContain(api.teamA[5]!.openstackId);
    expect(await vmRow.getByRole('link', { name: 'Image/ubuntu' }).getAttribute('href')).toBe('/namespaces/team-a/Image/ubuntu');
    expect(await page.locator('details.ns').nth(1).textContent()).toContain('not readable by you');
    await shot(page, 'sync-tree');
    await vmRow.getByRole('link', { name: 'vm-a', exact: true }).click();
    await page.waitForURL(`${base}/namespaces/team-a/VirtualMachine/vm-a`);
    expect(await page.locator('table.events').textContent()).toContain('Recreated');
    await shot(page, 'object');
    await page.goBack();
    await page.waitForURL(`${base}/syncs/team-a`);
    await page.getByRole('link', { name: /Held revision/ }).click();
    await page.waitForURL(`${base}/syncs/team-a/plan`);
    // The URL changes before the plan's JSON is in: wait for its list, then count it.
    await page.locator('.plan-deletions li').first().waitFor();
    expect(await page.locator('.plan-deletions li').count()).toBe(4);
    expect(await page.locator('pre code').textContent()).toContain('kubectl annotate sync team-a');
    await shot(page, 'plan');
  });

  it("answers a URL of team-b with the 403 page, the API server's words in it", async () => {
    await page.goto(`${base}/namespaces/team-b`);
    await page.getByRole('heading', { name: '403 — not allowed' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('cannot get resource "namespaces" in the namespace "team-b"');
    await shot(page, 'forbidden');
  });

  it('adds a new network to the open Sync page when the server says it changed, without a reload', async () => {
    await page.goto(`${base}/syncs/team-a`);
    await page.locator('[data-object="Network/net-a"]').waitFor();
    await page.evaluate('window.__same = true');
    await page.waitForTimeout(300); // the event stream is open
    api.teamA.push({ kind: 'Network', namespace: 'team-a', name: 'net-new', openstackId: 'f0f0f0f0-0000-4000-8000-000000000001', health: 'Ready', refs: [] });
    const sent = Date.now();
    api.changed('Network', 'net-new');
    await page.locator('[data-object="Network/net-new"]').waitFor({ timeout: 2_000 });
    console.log(`view: a change event → the new row on the open page in ${Date.now() - sent} ms`);
    expect(await page.evaluate('window.__same')).toBe(true);
  });

  it('shows an image with its new digest active and the previous one kept', async () => {
    await page.goto(`${base}/images`);
    const rows = page.locator('[data-image="team-a/ubuntu"] table.versions tbody tr');
    await rows.first().waitFor();
    expect(await rows.nth(0).textContent()).toContain('active');
    expect(await rows.nth(1).textContent()).toContain('kept');
    await shot(page, 'images');
  });

  it("shows an upgrade's steps as they advance", async () => {
    const step = (s: string, state: 'Done' | 'Running' | 'Waiting', min: number) => ({ step: s, state, startedAt: new Date(Date.now() - min * 60_000).toISOString(), ...(state === 'Done' ? { finishedAt: new Date(Date.now() - (min - 1) * 60_000).toISOString() } : {}) });
    api.steps = { from: '2025.1', to: '2025.2', phase: 'Upgrading', startedAt: new Date().toISOString(), steps: [step('backup', 'Running', 1), { step: 'chart keystone', state: 'Waiting' }] };
    await page.goto(`${base}/clouds/lab`);
    await page.locator('[data-step="backup"].s-running').waitFor();
    api.steps = { ...api.steps, steps: [step('backup', 'Done', 3), step('chart keystone', 'Done', 2), step('Job keystone-db-sync', 'Running', 1), { step: 'gate keystone', state: 'Waiting' }] };
    api.changed('OpenStackCloud', 'lab');
    await page.locator('[data-step="Job keystone-db-sync"].s-running').waitFor({ timeout: 2_000 });
    expect(await page.locator('[data-step="backup"]').getAttribute('class')).toContain('s-done');
    expect(statSync(await shot(page, 'cloud')).size).toBeGreaterThan(10_000);
  });

  it('reaches every link and control by keyboard, with a visible focus ring', async () => {
    await page.goto(`${base}/`);
    await page.locator('table.syncs').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    await page.keyboard.press('Tab');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).toBe('solid');
    expect(await page.locator('header[class="banner"], main, nav[aria-label="Sections"]').count()).toBe(3);
  });

  it('shows a namespace of 1 000 objects a page at a time (time to first content measured in the browser)', async () => {
    const kinds = ['Network', 'Subnet', 'Port', 'Volume', 'SecurityGroup'];
    api.big = Array.from({ length: 1000 }, (_, n): ObjectSummary => ({ kind: kinds[n % kinds.length]!, namespace: 'big', name: `obj-${String(n).padStart(4, '0')}`, openstackId: `${n.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`, health: n % 97 === 0 ? 'Stalled' : 'Ready', refs: [] }));
    const fresh = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await fresh.context().addCookies(await page.context().cookies());
    await watchFirstContent(fresh, '[data-object]');
    await fresh.goto(`${base}/namespaces/big`);
    const ms = await firstContentMs(fresh);
    console.log(`BENCH view.namespace-1000.first-content-ms ${ms.toFixed(0)} (contract double, ${1000} objects, headless Chromium)`);
    expect(await fresh.locator('[data-object]').count()).toBe(kinds.length * 100);
    await fresh.getByRole('button', { name: 'Next' }).first().click();
    await fresh.getByText('Rows 101–200 of 200').first().waitFor();
    await shot(fresh, 'namespace-1000', false);
    await fresh.close();
  });
});
