import type { ResolvedDisk } from '../../oci/disk-source.ts';
import { KupenstackError } from '../errors.ts';
import { patchImage, pointer } from './image-api.ts';
import { importStaged } from './import-task.ts';
import { propSourceFormat, type GlanceImage } from './version-rules.ts';
import type { ServiceClient } from '../openstack/service.ts';

/**
 * A version that lands raw through Glance's interoperable import (raw-target.ts
 * decides when): the same verified stream goes to `PUT /stage` instead of
 * `PUT /file`, then glance-direct imports it and the image_conversion plugin
 * makes it raw. The version keeps its identity (oci_manifest_digest): its
 * Glance checksum and size become the raw disk's, which nothing of ours keys on.
 */

/** An import Glance has not finished after this long is given up (versions.ts deletes an image `importing` that long as stalled). */
const importTimeoutMs = 3600_000;

/** Before staging: the pushed format is recorded, so the manifest's diskFormat (the artifact's) is no drift once Glance made it raw. */
export async function markSourceFormat(image: ServiceClient, img: GlanceImage, signal?: AbortSignal): Promise<void> {
  await patchImage(image, img.id, [{ op: 'add', path: pointer(propSourceFormat), value: String(img.disk_format) }], signal);
}

/**
 * After staging `sent` bytes: Glance holds all of them (as PUT /file's check
 * does), the import runs to its end, and the image is raw with the disk's
 * virtual size. A failure is a KupenstackError with Glance's message; the
 * caller (uploadVersion) deletes the image.
 */
export async function importStagedVersion(image: ServiceClient, img: GlanceImage, sent: number, disk: ResolvedDisk, signal: AbortSignal): Promise<GlanceImage> {
  const staged = await image.get<GlanceImage>(`/images/${img.id}`);
  if (staged.status !== 'uploading' || staged.size !== sent)
    throw new KupenstackError('image.oci-stored', `Glance image ${img.id} is ${staged.status} with ${String(staged.size)} bytes after staging ${sent}`);
  const done = await importStaged(image, img.id, { timeoutMs: importTimeoutMs, signal });
  if (done.disk_format !== 'raw')
    throw new KupenstackError(
      'image.not-converted',
      `Glance imported image ${img.id} as ${String(done.disk_format)}, not raw: its image_conversion plugin is off; ` +
        `set [image_import_opts] image_import_plugins = ['image_conversion'] and [image_conversion] output_format = raw, or run with --glance-disk-format keep`,
    );
  const virtual = typeof done.virtual_size === 'number' ? done.virtual_size : undefined;
  const expected = disk.virtualSize ?? virtual;
  if (typeof done.size !== 'number' || (expected !== undefined && done.size !== expected))
    throw new KupenstackError(
      'image.oci-stored',
      `Glance image ${img.id} converted to raw holds ${String(done.size)} bytes, but the disk's virtual size is ${String(expected)}`,
    );
  return done;
}
