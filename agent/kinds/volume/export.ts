import type { KindExport } from '../kit/export.ts';
import { projectItems, text } from '../kit/export.ts';

/** Cinder's default type, asked once per export: a volume of that type does not say so. */
const defaultType = (s: Parameters<KindExport['list']>[0]): Promise<string | undefined> =>
  s.memo('Volume:default-type', async () => (await s.volume.find<{ volume_type: { name: string } }>('/types/default'))?.volume_type.name);

/**
 * A volume: its size, and what differs from Cinder's defaults (type, zone,
 * multi-attach); the image it was made from by reference. Where it is attached
 * is the VM's to say (`volumes`), as in a manifest a person writes.
 */
export const volumeExport: KindExport = {
  kind: 'Volume',
  async list(s) {
    const [items, type] = await Promise.all([
      projectItems(s, 'Volume', 'os-vol-tenant-attr:tenant_id', (project) =>
        s.volume.list('/volumes/detail', 'volumes', { all_tenants: 1, project_id: project }),
      ),
      defaultType(s),
    ]);
    // The default type rides along on each object, so spec() stays synchronous.
    return items.map((raw) => ({ ...raw, '(default type)': type }));
  },
  skip: (raw) =>
    String(raw.status).startsWith('error') || raw.status === 'deleting' ? `Cinder status ${String(raw.status)}: nothing to take over` : undefined,
  spec(raw, s) {
    const spec: Record<string, unknown> = { size: raw.size };
    const description = text(raw.description);
    if (description) spec.description = description;
    if (typeof raw.volume_type === 'string' && raw.volume_type !== raw['(default type)']) spec.volumeType = raw.volume_type;
    if (typeof raw.availability_zone === 'string' && raw.availability_zone !== 'nova') spec.availabilityZone = raw.availability_zone;
    if (raw.multiattach === true) spec.multiattach = true;
    const image = (raw.volume_image_metadata as { image_id?: string } | undefined)?.image_id;
    if (image) spec.imageRef = { name: s.ref('Image', image) };
    const metadata = Object.fromEntries(Object.entries((raw.metadata ?? {}) as Record<string, string>).filter(([k]) => !k.startsWith('kupenstack_')));
    if (Object.keys(metadata).length > 0) spec.metadata = metadata;
    return spec;
  },
};
