import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import type { CredentialStore } from '../../oci/auth/credentials.ts';
import type { RegistryClientOptions } from '../../oci/client.ts';
import { isAllowedProperty, vmimage } from '../../oci/formats/vmimage-annotations.ts';
import { kubevirt } from '../../oci/formats/kubevirt.ts';
import { pushKubevirtStream, vmNameOf } from '../../oci/kubevirt-push.ts';
import { pushDiskStream, type PushResult } from '../../oci/push.ts';
import { KupenstackError } from '../errors.ts';
import type { ServiceClient } from '../openstack/service.ts';
import { getImageData } from './image-api.ts';

/**
 * `kupenstack image export`: a Glance image → our disk artifact in a
 * registry, the reverse of import. One pass, constant memory: Glance's
 * data stream is hashed the way Glance hashed it (os_hash_algo and the md5
 * `checksum`) while it is uploaded, and a mismatch fails the stream before
 * the upload completes, so nothing is tagged. The image's properties
 * become the annotations import reads back.
 */

export interface ExportOptions {
  insecure?: boolean;
  credentials?: CredentialStore;
  client?: Omit<RegistryClientOptions, 'registry' | 'insecure' | 'credentials'>;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
  /** Idle timeout of the download (ms). */
  timeoutMs?: number;
  /** kupenstack (default): our disk artifact; kubevirt: KubeVirt's OCI VM export (oci/kubevirt-push.ts), raw images only. */
  format?: ExportFormat;
  /** kubevirt: the volume name of the disk (io.kubevirt.disk.name); default rootdisk. */
  diskName?: string;
}

export type ExportFormat = 'kupenstack' | 'kubevirt';

export interface ExportResult extends PushResult {
  imageId: string;
  /** What the data was checked against: Glance's own hashes. */
  verified: string[];
}

type GlanceImage = Record<string, unknown> & { id: string; status: string };

/** Annotations from Glance fields: the ones import maps back (vmimage-annotations.ts), nothing Glance or KupenStack keeps for itself. */
export function annotationsOf(image: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const direct: Record<string, string> = {
    architecture: vmimage.architecture,
    os_type: vmimage.osType,
    os_distro: vmimage.osDistro,
    os_version: vmimage.osVersion,
  };
  for (const [key, annotation] of Object.entries(direct)) if (typeof image[key] === 'string' && image[key] !== '') out[annotation] = image[key];
  if (typeof image.min_disk === 'number' && image.min_disk > 0) out[vmimage.minDisk] = String(image.min_disk);
  if (typeof image.min_ram === 'number' && image.min_ram > 0) out[vmimage.minRam] = String(image.min_ram);
  for (const [key, value] of Object.entries(image)) {
    if (
      key in direct ||
      typeof value !== 'string' ||
      key.startsWith('kupenstack_') ||
      key === 'owner_specified.openstack.md5' ||
      key.startsWith('owner_specified.')
    )
      continue;
    if (isAllowedProperty(key)) out[`${vmimage.property}${key}`] = value;
  }
  return out;
}

/** Hashes what passes with Glance's algorithms and fails the stream at its end when a hash differs. */
class GlanceHashCheck extends Transform {
  private readonly checks: { name: string; hash: Hash; expected: string }[] = [];
  private readonly where: string;

  constructor(image: Record<string, unknown>, where: string) {
    super({ highWaterMark: 1 << 20 });
    this.where = where;
    const algo = image.os_hash_algo;
    const value = image.os_hash_value;
    if (typeof algo === 'string' && typeof value === 'string' && value !== '')
      this.checks.push({ name: `os_hash_value (${algo})`, hash: createHash(algo), expected: value.toLowerCase() });
    // md5 only where Glance kept no multihash (images from before Rocky): a third hash of every byte cost a third of the export's CPU.
    else if (typeof image.checksum === 'string' && image.checksum !== '')
      this.checks.push({ name: 'checksum (md5)', hash: createHash('md5'), expected: image.checksum.toLowerCase() });
  }

  get verified(): string[] {
    return this.checks.map((c) => c.name);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (const c of this.checks) c.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    for (const c of this.checks) {
      const got = c.hash.digest('hex');
      if (got !== c.expected)
        return callback(
          new KupenstackError(
            'image.export-digest',
            `${this.where}: the data Glance sent does not match its ${c.name} (${c.expected.slice(0, 16)}…, got ${got.slice(0, 16)}…); nothing was tagged, export again`,
          ),
        );
    }
    callback();
  }
}

/** The image in the project by id, else by name (exactly one). */
export async function findGlanceImage(image: ServiceClient, idOrName: string, projectId: string): Promise<GlanceImage> {
  const byId = /^[0-9a-f-]{36}$/i.test(idOrName) ? await image.find<GlanceImage>(`/images/${idOrName}`) : undefined;
  if (byId) return byId;
  const byName = await image.list<GlanceImage>('/images', 'images', { name: idOrName, owner: projectId });
  if (byName.length !== 1)
    throw new KupenstackError(
      'usage',
      `${idOrName}: ${byName.length === 0 ? 'no Glance image of the project has this id or name' : `${byName.length} Glance images of the project have this name; pass the id`}`,
    );
  return byName[0]!;
}

export async function exportImage(image: ServiceClient, found: GlanceImage, ref: string, options: ExportOptions = {}): Promise<ExportResult> {
  const where = `Glance image ${found.id}`;
  if (found.status !== 'active')
    throw new KupenstackError('image.export-state', `${where} is ${found.status}, not active: only an image with data can be exported`);
  const format = typeof found.disk_format === 'string' ? found.disk_format : '';
  if (!format) throw new KupenstackError('image.export-state', `${where} has no disk_format; set one (openstack image set --disk-format …)`);
  if (options.format === 'kubevirt' && format !== 'raw')
    throw new KupenstackError(
      'image.export-format',
      `${where} is ${format}; KubeVirt's VM export holds raw disks only (${kubevirt.diskRawZstd}), and a ${format} cannot be made raw while it streams ` +
        `(its tables may follow its data). Convert it first (qemu-img convert -O raw, then upload it as a raw image), or export it without --format kubevirt`,
    );
  const size = typeof found.size === 'number' ? found.size : undefined;
  const data = await getImageData(image, found.id, { timeoutMs: options.timeoutMs ?? 60_000, signal: options.signal });
  const check = new GlanceHashCheck(found, where);
  data.on('error', (e) => check.destroy(e));
  const name = typeof found.name === 'string' && found.name !== '' ? found.name : found.id;
  const title = `${name.replace(/[^A-Za-z0-9._-]+/g, '_')}.${format}`;
  const common = {
    ...(size !== undefined ? { size } : {}),
    annotations: annotationsOf(found),
    ...(options.insecure ? { insecure: true } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
    ...(options.client ? { client: options.client } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
  const result =
    options.format === 'kubevirt'
      ? await pushKubevirtStream(data.pipe(check), ref, {
          ...common,
          diskName: options.diskName ?? 'rootdisk',
          vmName: vmNameOf(name),
          ...(typeof found.architecture === 'string' && found.architecture !== '' ? { architecture: found.architecture } : {}),
          ...(typeof found.min_ram === 'number' && found.min_ram > 0 ? { memoryMib: found.min_ram } : {}),
        })
      : await pushDiskStream(data.pipe(check), ref, { ...common, format, title });
  return { ...result, imageId: found.id, verified: check.verified };
}
