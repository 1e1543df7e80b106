import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.ts';

/**
 * Where a Git source keeps its data between runs and restarts:
 *
 *   <cacheDir>/<hash of the URL>/repo.git            bare repository (shallow fetches land here)
 *   <cacheDir>/<hash of the URL>/<ref slug>/rev-<sha>  one clean checkout per revision handed out
 *   <cacheDir>/<hash of the URL>/<ref slug>/state.json current and previous revision
 *
 * A checkout is written to a temporary name and renamed when complete, so a
 * `rev-<sha>` directory is always whole. Only the current and the previous
 * checkout are kept: a consumer still reading the previous one is not
 * disturbed by the next fetch, only by the one after.
 */
export interface CacheLayout {
  root: string;
  gitdir: string;
  checkouts: string;
}

export function cacheLayout(cacheDir: string, redactedUrl: string, refKey: string): CacheLayout {
  const root = join(cacheDir, shortHash(redactedUrl.replace(/\/+$/, '')));
  return { root, gitdir: join(root, 'repo.git'), checkouts: join(root, `ref-${slug(refKey)}-${shortHash(refKey).slice(0, 8)}`) };
}

export function checkoutDir(layout: CacheLayout, commit: string): string {
  return join(layout.checkouts, `rev-${commit}`);
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 48);
}

/** A fresh temporary name next to the final checkout (same file system, so the rename is atomic). */
export function temporaryCheckoutDir(layout: CacheLayout, commit: string): string {
  return join(layout.checkouts, `.tmp-rev-${commit}-${randomBytes(4).toString('hex')}`);
}

interface CheckoutState {
  current?: string;
  previous?: string;
}

async function readState(layout: CacheLayout): Promise<CheckoutState> {
  try {
    const parsed: unknown = JSON.parse(await readFile(join(layout.checkouts, 'state.json'), 'utf8'));
    return parsed && typeof parsed === 'object' ? parsed : {};
  } catch {
    return {};
  }
}

/** The commit last handed out for this ref (its checkout may be gone). */
export async function currentCheckout(layout: CacheLayout): Promise<string | undefined> {
  const { current } = await readState(layout);
  return typeof current === 'string' && /^[0-9a-f]{40}$/.test(current) ? current : undefined;
}

/**
 * Records `commit` as the current checkout and deletes every other checkout
 * except the one that was current before (and unfinished temporary ones).
 */
export async function promoteCheckout(layout: CacheLayout, commit: string): Promise<void> {
  const state = await readState(layout);
  const next: CheckoutState = state.current === commit ? state : { current: commit, previous: state.current };
  const keep = new Set([next.current, next.previous].filter((c): c is string => c !== undefined).map((c) => `rev-${c}`));
  // A leftover temporary file of a killed write starts with `state.json.`: removed below.
  await writeFileAtomic(join(layout.checkouts, 'state.json'), JSON.stringify(next));
  for (const entry of await readdir(layout.checkouts)) {
    if (entry === 'state.json' || keep.has(entry.replace(/\.meta\.json$/, ''))) continue;
    if (entry.startsWith('rev-') || entry.startsWith('.tmp-rev-') || entry.startsWith('state.json.'))
      await rm(join(layout.checkouts, entry), { recursive: true, force: true });
  }
}

/** What is known about a checkout besides its files (written before the checkout is renamed into place). */
export interface CheckoutMeta {
  skippedLinks: string[];
}

export async function writeCheckoutMeta(layout: CacheLayout, commit: string, meta: CheckoutMeta): Promise<void> {
  await writeFile(`${checkoutDir(layout, commit)}.meta.json`, JSON.stringify(meta));
}

export async function readCheckoutMeta(layout: CacheLayout, commit: string): Promise<CheckoutMeta> {
  try {
    const parsed = JSON.parse(await readFile(`${checkoutDir(layout, commit)}.meta.json`, 'utf8')) as Partial<CheckoutMeta>;
    return { skippedLinks: Array.isArray(parsed.skippedLinks) ? parsed.skippedLinks.filter((l): l is string => typeof l === 'string') : [] };
  } catch {
    return { skippedLinks: [] };
  }
}

/** Removes half-written checkouts left by a crash or an abort. */
export async function removeTemporaryCheckouts(layout: CacheLayout): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(layout.checkouts);
  } catch {
    return; // nothing checked out yet
  }
  for (const entry of entries) {
    if (entry.startsWith('.tmp-rev-')) await rm(join(layout.checkouts, entry), { recursive: true, force: true });
  }
}

/**
 * Serialises work on one cache directory inside this process: two Syncs of
 * the same repository share its object store. A caller that stops waiting
 * (abort) does not release the lock early; the work it started has to end first.
 */
const locks = new Map<string, Promise<unknown>>();

export function withCacheLock<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = locks.get(key) ?? Promise.resolve();
  const run = previous.then(work, work);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  locks.set(key, settled);
  void settled.then(() => {
    if (locks.get(key) === settled) locks.delete(key);
  });
  return run;
}
