import type { KindExport } from '../kit/export.ts';
import { projectItems } from '../kit/export.ts';
import { toRemote } from './remote.ts';

/** Properties the client writes on every upload (openstacksdk's checksums), not the person. */
const clientMade = /^owner_specified\.openstack\./;

/**
 * A Glance image of the project, adopted as it is: no `source` (its data is
 * already in Glance and is never downloaded again), the formats, and what
 * differs from Glance's defaults.
 */
export const imageExport: KindExport = {
  kind: 'Image',
  // Glance's pages are 25 images unless asked for more (1000 is its usual cap).
  list: (s) => projectItems(s, 'Image', 'owner', (project) => s.image.list('/images', 'images', { owner: project, visibility: 'all', limit: 1000 })),
  skip: (raw) => (raw.status !== 'active' ? `Glance status ${String(raw.status)}: only images that hold their data are taken over` : undefined),
  spec(raw) {
    const fields = toRemote(raw).fields;
    const spec: Record<string, unknown> = { diskFormat: fields.disk_format, containerFormat: fields.container_format };
    if (fields.visibility === 'public' || fields.visibility === 'community') spec.visibility = fields.visibility;
    if (fields.protected === true) spec.protected = true;
    if (typeof fields.min_disk === 'number' && fields.min_disk > 0) spec.minDisk = fields.min_disk;
    if (typeof fields.min_ram === 'number' && fields.min_ram > 0) spec.minRam = fields.min_ram;
    // All or none: the properties are compared as one set, so writing some would remove the others.
    const properties = fields.properties as Record<string, unknown>;
    if (Object.keys(properties).some((k) => !clientMade.test(k))) spec.properties = properties;
    const tags = fields.tags as string[];
    if (tags.length > 0) spec.tags = tags;
    return spec;
  },
};
