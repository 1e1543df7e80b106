import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheLayout, checkoutDir, currentCheckout, promoteCheckout, removeTemporaryCheckouts, temporaryCheckoutDir, withCacheLock } from '../../agent/source/git-cache.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const sha = (c: string): string => c.repeat(40);

describe('Git cache layout', () => {
  it('keys the store by URL and the checkouts by ref', () => {
    const a = cacheLayout('/c', 'https://h/r.git', 'branch:main');
    expect(cacheLayout('/c', 'https://h/r.git/', 'branch:main')).toEqual(a);
    expect(cacheLayout('/c', 'https://h/r.git', 'tag:main').gitdir).toBe(a.gitdir);
    expect(cacheLayout('/c', 'https://h/r.git', 'tag:main').checkouts).not.toBe(a.checkouts);
    expect(cacheLayout('/c', 'https://h/other.git', 'branch:main').root).not.toBe(a.root);
  });

  it('keeps the current and the previous checkout, also across a restart (state on disk)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'ks-cache-unit-'));
    dirs.push(root);
    const layout = cacheLayout(root, 'https://h/r.git', 'branch:main');
    // As the source does: the checkout is made, then promoted.
    const made = async (c: string): Promise<void> => {
      await mkdir(checkoutDir(layout, sha(c)), { recursive: true });
      await writeFile(`${checkoutDir(layout, sha(c))}.meta.json`, '{"skippedLinks":[]}');
      await promoteCheckout(layout, sha(c));
    };
    await made('a');
    await made('b');
    await promoteCheckout(layout, sha('b')); // same revision again: nothing moves
    expect((await readdir(layout.checkouts)).sort()).toEqual([`rev-${sha('a')}`, `rev-${sha('a')}.meta.json`, `rev-${sha('b')}`, `rev-${sha('b')}.meta.json`, 'state.json']);
    // A new process reads the same state.
    expect(await currentCheckout(cacheLayout(root, 'https://h/r.git', 'branch:main'))).toBe(sha('b'));
    await made('c');
    expect((await readdir(layout.checkouts)).filter((e) => e.startsWith('rev-') && !e.endsWith('.json')).sort()).toEqual([`rev-${sha('b')}`, `rev-${sha('c')}`]);

    const tmp = temporaryCheckoutDir(layout, sha('d'));
    await mkdir(tmp);
    await removeTemporaryCheckouts(layout);
    expect((await readdir(layout.checkouts)).some((e) => e.startsWith('.tmp-'))).toBe(false);
  });

  it('runs work on one cache one at a time, also after a failure', async () => {
    const order: string[] = [];
    const step = (name: string, ms: number, fail = false) => () =>
      new Promise<void>((resolve, reject) => {
        order.push(`${name}:start`);
        setTimeout(() => {
          order.push(`${name}:end`);
          if (fail) reject(new Error(name));
          else resolve();
        }, ms);
      });
    const results = await Promise.allSettled([withCacheLock('k', step('a', 30, true)), withCacheLock('k', step('b', 5)), withCacheLock('other', step('x', 1))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(order.filter((e) => !e.startsWith('x'))).toEqual(['a:start', 'a:end', 'b:start', 'b:end']);
    expect(order.indexOf('x:end')).toBeLessThan(order.indexOf('a:end'));
  });
});
