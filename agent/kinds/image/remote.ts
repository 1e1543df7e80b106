import { markerFromMetadata, ownerTagPrefix } from '../../ownership/marker.ts';
import { bookkeepingProperties, declaredDiskFormat, propDigest, propDisk } from '../../glance/version-rules.ts';
import type { Remote } from '../kit/adapter.ts';

/**
 * A Glance image as the Image adapter's fields see it, for both sources.
 * `digest` is what the image's data is: the OCI manifest digest, or the
 * source URL for a URL image; null while Glance holds no data (`queued`).
 */

export type RawImage = Record<string, unknown>;

export const sourceKey = 'kupenstack_source';
export const sourceShaKey = 'kupenstack_source_sha256';
/** Image attributes Glance defines; every other key is a property. */
const coreAttributes = new Set([
  'id',
  'name',
  'status',
  'visibility',
  'protected',
  'checksum',
  'owner',
  'size',
  'virtual_size',
  'min_ram',
  'min_disk',
  'disk_format',
  'container_format',
  'created_at',
  'updated_at',
  'tags',
  'self',
  'file',
  'schema',
  'os_hidden',
  'os_hash_algo',
  'os_hash_value',
  'locations',
  'direct_url',
  'stores',
]);

/** The `source` field of an OCI image: `oci`, or `oci:<disk>` when it holds a named KubeVirt disk (another disk replaces it). */
export function ociSourceField(disk: string | undefined): string {
  return disk === undefined ? 'oci' : `oci:${disk}`;
}

export function toRemote(raw: RawImage): Remote {
  const properties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw))
    if (!coreAttributes.has(k) && !k.startsWith('kupenstack_') && !k.startsWith('os_glance_') && !bookkeepingProperties.has(k)) properties[k] = v;
  const digest = typeof raw[propDigest] === 'string' ? raw[propDigest] : undefined;
  const tags = Array.isArray(raw.tags) ? (raw.tags as string[]).filter((t) => !t.startsWith(ownerTagPrefix)).sort() : [];
  const url = typeof raw[sourceKey] === 'string' ? raw[sourceKey] : undefined;
  const sha = typeof raw[sourceShaKey] === 'string' ? raw[sourceShaKey] : undefined;
  const marker = markerFromMetadata(raw);
  return {
    id: String(raw.id),
    name: typeof raw.name === 'string' ? raw.name : '',
    status: String(raw.status),
    ...(marker ? { marker } : {}),
    raw,
    fields: {
      name: raw.name,
      disk_format: declaredDiskFormat(raw),
      container_format: raw.container_format,
      visibility: raw.visibility,
      protected: raw.protected,
      min_disk: raw.min_disk,
      min_ram: raw.min_ram,
      properties,
      tags,
      source: digest ? ociSourceField(typeof raw[propDisk] === 'string' ? raw[propDisk] : undefined) : url ? { url, ...(sha ? { sha256: sha } : {}) } : null,
      digest: raw.status === 'queued' ? null : (digest ?? url ?? null),
    },
  };
}
