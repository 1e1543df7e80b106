import type { ResolvedDisk } from '../../../oci/disk-source.ts';
import { propDigest, type GlanceImage } from '../../glance/version-rules.ts';
import { BoundExceeded, bounds, formatSize } from '../../util/bounds.ts';
import type { AdapterContext } from '../kit/adapter.ts';

/**
 * The namespace's images bound (--max-namespace-images, --max-namespace-image-bytes), asked before a
 * new Glance image or a new use of a shared one. Counted where the images are stored, as the
 * project's own token sees them: the project's images (hidden versions too) and the shared OCI
 * versions it is a member of, which live in the agent's images project, outside the project's
 * Glance quota. A digest already among them adds nothing. An unknown size (a URL before its
 * download, a compressed layer without its size annotation) counts as what is known of it.
 */
export async function checkImageRoom(ctx: AdapterContext, address: string, disk?: ResolvedDisk): Promise<void> {
  const b = bounds();
  // Unbounded (kupenstack apply): no Glance call at all.
  if (b.namespaceImages === Infinity && b.namespaceImageBytes === Infinity) return;
  const image = ctx.apis.image;
  const [own, hidden, shared] = await Promise.all([
    image.list<GlanceImage>('/images', 'images', { owner: ctx.projectId, visibility: 'all' }),
    image.list<GlanceImage>('/images', 'images', { owner: ctx.projectId, visibility: 'all', os_hidden: true }),
    image.list<GlanceImage>('/images', 'images', { visibility: 'shared', member_status: 'all' }),
  ]);
  const byId = new Map<string, GlanceImage>();
  for (const img of [...own, ...hidden, ...shared]) byId.set(img.id, img);
  const images = [...byId.values()];
  if (disk && images.some((img) => img[propDigest] === disk.manifestDigest)) return;
  const count = images.length + 1;
  if (count > b.namespaceImages)
    throw new BoundExceeded(
      'image-count',
      String(count),
      String(b.namespaceImages),
      `${address} would be image number ${count} of the namespace (shared versions it uses included); delete Images or lower their keep`,
    );
  const adding = disk ? (disk.diskSize ?? disk.blob.size) : 0;
  const total = images.reduce((n, img) => n + (typeof img.size === 'number' ? img.size : 0), 0) + adding;
  if (total > b.namespaceImageBytes)
    throw new BoundExceeded(
      'image-bytes',
      formatSize(total),
      formatSize(b.namespaceImageBytes),
      `${address} would bring the namespace's images (shared versions it uses included) over the limit; delete Images or lower their keep`,
    );
}
