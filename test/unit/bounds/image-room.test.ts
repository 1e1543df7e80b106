import { afterEach, describe, expect, it } from 'vitest';
import type { ResolvedDisk } from '../../../oci/disk-source.ts';
import { checkImageRoom } from '../../../agent/kinds/image/room.ts';
import type { AdapterContext } from '../../../agent/kinds/kit/adapter.ts';
import { configureBounds, defaultBounds, unbounded } from '../../../agent/util/bounds.ts';

const GiB = 1024 ** 3;
type Img = { id: string; owner: string; size: number | null; oci_manifest_digest?: string };

/** The project's token's view of Glance: its own images (shown, hidden) and the shared ones it is a member of. */
function ctxWith(own: Img[], hidden: Img[], shared: Img[]): AdapterContext {
  const list = (_path: string, _key: string, query: Record<string, unknown>): Promise<Img[]> =>
    Promise.resolve(query.visibility === 'shared' ? shared : query.os_hidden === true ? hidden : own);
  return { projectId: 'p1', namespace: 't1', apis: { image: { list } } } as unknown as AdapterContext;
}

const disk = (digest: string, size: number): ResolvedDisk => ({ manifestDigest: digest, diskSize: size, blob: { size: 1 } }) as unknown as ResolvedDisk;

describe("a namespace's images bound", () => {
  afterEach(() => configureBounds(unbounded));

  it('counts the shared versions the project uses, stored in the images project, with its own', async () => {
    configureBounds({ ...defaultBounds, namespaceImages: 3, namespaceImageBytes: 100 * GiB });
    const ctx = ctxWith([{ id: 'a', owner: 'p1', size: GiB }], [{ id: 'b', owner: 'p1', size: GiB }], [{ id: 's', owner: 'images', size: GiB }]);
    await expect(checkImageRoom(ctx, 't1/Image/new', disk('sha256:n', GiB))).rejects.toThrow(
      'bound.image-count: 4 > 3 (--max-namespace-images): t1/Image/new would be image number 4 of the namespace',
    );
  });

  it('bytes: the shared versions count for every namespace that uses them', async () => {
    configureBounds({ ...defaultBounds, namespaceImages: 100, namespaceImageBytes: 10 * GiB });
    const ctx = ctxWith([{ id: 'a', owner: 'p1', size: 2 * GiB }], [], [{ id: 's', owner: 'images', size: 8 * GiB }]);
    await expect(checkImageRoom(ctx, 't1/Image/new', disk('sha256:n', 2 * GiB))).rejects.toThrow(
      'bound.image-bytes: 12 GiB > 10 GiB (--max-namespace-image-bytes)',
    );
  });

  it('unbounded (kupenstack apply): no Glance call at all', async () => {
    const none = {
      projectId: 'p1',
      namespace: 't1',
      apis: { image: { list: () => Promise.reject(new Error('no call expected')) } },
    } as unknown as AdapterContext;
    await expect(checkImageRoom(none, 't1/Image/a', disk('sha256:a', 9 * GiB))).resolves.toBeUndefined();
  });

  it('a digest the namespace already holds adds nothing; a new one within both bounds passes', async () => {
    configureBounds({ ...defaultBounds, namespaceImages: 2, namespaceImageBytes: 10 * GiB });
    const full = ctxWith([{ id: 'a', owner: 'p1', size: 9 * GiB, oci_manifest_digest: 'sha256:a' }], [], [{ id: 's', owner: 'images', size: GiB }]);
    await expect(checkImageRoom(full, 't1/Image/a', disk('sha256:a', 9 * GiB))).resolves.toBeUndefined();
    const room = ctxWith([{ id: 'a', owner: 'p1', size: GiB }], [], []);
    await expect(checkImageRoom(room, 't1/Image/new', disk('sha256:n', GiB))).resolves.toBeUndefined();
  });
});
