import { describe, expect, it, vi } from 'vitest';
import type { DiskSource, ResolvedDisk } from '../../oci/disk-source.ts';
import { resolveManifest } from '../../agent/kinds/image/oci.ts';
import type { AdapterContext } from '../../agent/kinds/kit/adapter.ts';
import { ImageMemory } from '../../agent/kinds/kit/image-memory.ts';
import { manifest } from '../support/context.ts';

// Moved tags reach the Image kind as engine input (EngineDeps.refresh, the
// front end's own record of what a registry notification moved): a manifest
// named there is resolved again whatever its interval, once for all passes
// handed the same set; without it the interval holds.

const digest = (n: number): string => `sha256:${String(n).repeat(64)}`;

/** A registry whose tag moves at each resolve, counting them. */
function movingRegistry(): { source: DiskSource; resolves: () => number } {
  let n = 0;
  const source: DiskSource = {
    resolve: () => {
      n++;
      const disk: ResolvedDisk = {
        reference: `127.0.0.1:5050/team/cirros@${digest(n)}`,
        repository: 'team/cirros',
        tag: 'edge',
        manifestDigest: digest(n),
        packaging: 'kupenstack-artifact',
        diskFormat: 'qcow2',
        blob: { digest: digest(9), size: 1, mediaType: 'application/octet-stream' },
        annotations: {},
        properties: {},
      };
      return Promise.resolve(disk);
    },
    open: () => Promise.reject(new Error('not opened here')),
  };
  return { source, resolves: () => n };
}

/** One pass's adapter context: its own memo, as the engine makes one per pass. */
function pass(images: ImageMemory, refresh?: ReadonlySet<string>): AdapterContext {
  const memos = new Map<string, Promise<unknown>>();
  return {
    namespace: 'ns',
    projectId: 'p1',
    owner: 'o1',
    images,
    ...(refresh ? { refresh } : {}),
    memo: <T>(key: string, load: () => Promise<T>): Promise<T> => {
      if (!memos.has(key)) memos.set(key, load());
      return memos.get(key) as Promise<T>;
    },
  } as AdapterContext;
}

describe('an Image named in refresh resolves again whatever its interval', () => {
  const m = manifest('Image', 'polled', 'ns', { source: { oci: { repository: '127.0.0.1:5050/team/cirros', tag: 'edge' } }, interval: '1h' });

  it('within the interval: the remembered answer, unless the run names the manifest moved; then once for the run', async () => {
    const images = new ImageMemory();
    const registry = movingRegistry();
    vi.spyOn(images.sources, 'get').mockReturnValue(registry.source);
    expect((await resolveManifest(m, pass(images))).manifestDigest).toBe(digest(1));
    // A later run within the hour: no registry call.
    expect((await resolveManifest(m, pass(images))).manifestDigest).toBe(digest(1));
    expect(registry.resolves()).toBe(1);
    // Another manifest moved: this one keeps its answer.
    expect((await resolveManifest(m, pass(images, new Set(['ns/Image/other'])))).manifestDigest).toBe(digest(1));
    // Named moved: asked again; the run's second pass (the full pass after the Images first) takes that answer.
    const refresh = new Set(['ns/Image/polled']);
    expect((await resolveManifest(m, pass(images, refresh))).manifestDigest).toBe(digest(2));
    expect((await resolveManifest(m, pass(images, refresh))).manifestDigest).toBe(digest(2));
    expect(registry.resolves()).toBe(2);
    // The next run names it again (another notification): asked again; a run without refresh keeps the answer.
    expect((await resolveManifest(m, pass(images, new Set(['ns/Image/polled'])))).manifestDigest).toBe(digest(3));
    expect((await resolveManifest(m, pass(images))).manifestDigest).toBe(digest(3));
    expect(registry.resolves()).toBe(3);
  });

  it('tells a front end whether a manifest was resolved since it took it moved (a failed run gives back the others)', async () => {
    const images = new ImageMemory();
    const registry = movingRegistry();
    const get = vi.spyOn(images.sources, 'get').mockReturnValue({ ...registry.source, resolve: () => Promise.reject(new Error('registry down')) });
    const taken = Date.now();
    // The registry fails: no answer, so the front end keeps it moved.
    await expect(resolveManifest(m, pass(images, new Set(['ns/Image/polled'])))).rejects.toThrow('registry down');
    expect(images.resolvedSince('ns/Image/polled', taken)).toBe(false);
    get.mockReturnValue(registry.source);
    await resolveManifest(m, pass(images, new Set(['ns/Image/polled'])));
    expect(images.resolvedSince('ns/Image/polled', taken)).toBe(true);
    expect(images.resolvedSince('ns/Image/other', taken)).toBe(false);
    // An answer from before the front end took it does not count.
    expect(images.resolvedSince('ns/Image/polled', Date.now() + 1000)).toBe(false);
  });
});
